"""msprof's op_summary: one row per device task, in every column scheme the toolchain wrote.

Schemes: `Task Start Time(us)` (or the older `Task Start Time` in ns), `Block Dim` / `Mix Block Dim`
(to CANN 8.5) or `Block Num` / `Mix Block Num` (9.x), optional `Model Name`, `Infer ID`, `OP State`,
`HF32 Eligible`; and the 2023 file that mixes in torch_npu's names (`Step Id`, `Start Time(us)`
beside `Op Name` and `Task Duration(us)`). torch_npu's kernel_details (kernel_details.py) is read by
the same row reader under its own column names.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.profile import KernelEvent, build_graph_run
from fuselens.core.measure.profile_csv import clean, has_columns, header_of, read_table
from fuselens.core.measure.result import GraphRun

KIND = "op_summary"
# Accepted spellings per field, with the factor that turns the value into microseconds.
START_COLUMNS = {"Task Start Time(us)": 1.0, "Task Start Time": 1e-3, "Start Time(us)": 1.0}
DURATION_COLUMNS = {"Task Duration(us)": 1.0, "Task Duration": 1e-3, "Duration(us)": 1.0}
BLOCK_COLUMNS = ("Block Dim", "Block Num")
STEP_COLUMNS = ("Infer ID", "Step Id")


@dataclass(frozen=True)
class OpRecord:
    """One device task (times in microseconds; None where the cell is N/A or invalid)."""

    line: int
    name: str
    op_type: str
    task_type: str
    device: str
    start_us: float
    dur_us: float
    block_dim: int | None
    input_shapes: tuple[tuple[int, ...] | None, ...]
    infer_id: int | None


def recognises(head: bytes) -> bool:
    """A CSV header with `Op Name`, `OP Type`, a start and a duration column (any scheme above)."""
    header = header_of(head)
    return has_columns(header, ("Op Name",), ("OP Type",), tuple(START_COLUMNS), tuple(DURATION_COLUMNS))


def parse_shapes(text: str | None) -> tuple[tuple[int, ...] | None, ...]:
    """`1,224,224,3;64` -> ((1, 224, 224, 3), (64,)); `; ; ; ;` -> five scalars; N/A -> ()."""
    cell = clean(text)
    if cell is None:
        return ()
    shapes: list[tuple[int, ...] | None] = []
    for part in cell.split(";"):
        dims = [d.strip() for d in part.split(",") if d.strip()]
        try:
            shapes.append(tuple(int(d) for d in dims))
        except ValueError:
            shapes.append(None)  # a dynamic or symbolic dim: shape not known
    return tuple(shapes)


def read_op_summary(path: str | os.PathLike[str]) -> list[OpRecord]:
    """The rows of one op_summary CSV; a malformed row is a FuseLensError naming the file and line."""
    return read_task_rows(path, {})


def read_task_rows(path: str | os.PathLike[str], aliases: dict[str, str]) -> list[OpRecord]:
    """Task rows of a CSV whose columns, renamed through `aliases`, are op_summary's; untimed rows left out."""
    table = read_table(path, aliases)
    name_col, type_col = table.need("Op Name"), table.need("OP Type")
    start_col, dur_col = table.need(*START_COLUMNS), table.need(*DURATION_COLUMNS)
    block_col, step_col = table.first(*BLOCK_COLUMNS), table.first(*STEP_COLUMNS)
    records = []
    for row in table.rows:
        name = row.text(name_col)
        if name is None:
            raise FuseLensError(f"{row.where}: empty {name_col!r}")
        start, duration = row.number(start_col), row.number(dur_col)
        if start is None or duration is None:
            continue  # a task msprof could not time: nothing to add to a timing table
        if duration < 0:
            raise FuseLensError(f"{row.where}: negative {dur_col!r} ({duration})")
        block = row.number(block_col) if block_col else None
        step = row.number(step_col) if step_col else None
        records.append(OpRecord(
            line=row.line, name=name, op_type=row.text(type_col) or "", task_type=row.text("Task Type") or "",
            device=f"npu:{row.text('Device_id') or 0}", start_us=start * START_COLUMNS[start_col],
            dur_us=duration * DURATION_COLUMNS[dur_col], block_dim=None if block is None else int(block),
            input_shapes=parse_shapes(row.cells.get("Input Shapes")), infer_id=None if step is None else int(step)))
    return records


def _steps(records: list[OpRecord]) -> list[int]:
    """A step index per record: `Infer ID` / `Step Id` when present, else a new step at each repeat of the
    first kernel."""
    if records and all(r.infer_id is not None for r in records):
        return [int(r.infer_id) for r in records]  # type: ignore[arg-type]
    first = records[0].name if records else None
    step, steps = -1, []
    for record in records:
        step += record.name == first
        steps.append(max(step, 0))
    return steps


def graph_run_from_records(label: str, records: list[OpRecord], graph: Graph | None = None) -> GraphRun:
    """The kernel table, step times and last-step timeline of task rows (start-time order)."""
    records = sorted(records, key=lambda r: r.start_us)
    steps = _steps(records)
    events = [KernelEvent(s, r.device, r.name, r.op_type, r.start_us, r.dur_us) for s, r in zip(steps, records)]
    spans: dict[int, list[float]] = defaultdict(list)
    for e in events:
        spans[e.step] += [e.start_us, e.start_us + e.dur_us]
    step_times = [max(v) - min(v) for _, v in sorted(spans.items())]
    run = build_graph_run(label, graph, events, step_times, len(spans))
    run.source = "msprof"
    return run
