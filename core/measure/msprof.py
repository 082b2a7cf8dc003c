"""Import msprof results from a real Ascend run into the same kernel-table form as a TF run.

Accepts `op_summary_*.csv` in every header variant the toolchain writes (`Task Start Time(us)`
or the older `Task Start Time` in ns, `Block Dim` or `Block Num`, optional `Model Name`,
`Infer ID`, `OP State`, `HF32 Eligible` columns), cells holding `N/A`, trailing tabs, the
4294967295 "invalid" sentinel and `; ; ; ;` scalar shapes; torch_npu's `kernel_details.csv`
(the same rows under other column names); `task_time_*.csv`; the `msprof_*.json` timeline (a
Chrome trace as a bare JSON array, whose "Ascend Hardware" process holds the device tasks);
`op_statistic_*.csv`; or a whole `PROF_*` folder (or a folder holding `original/` and `fused/`
runs, as the exported NPU script writes them). Large exports are sliced into several files
(`op_summary_slice_1_*.csv`, `msprof_slice_0_*.json`): all slices of a kind are read together.
`fusion_op_*.csv` is not a timing: `read_fusion_op` gives its fused op -> original ops map.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.profile import KernelEvent, build_graph_run
from fuselens.core.measure.result import GraphRun, KernelStat, RunResult

INVALID = 4294967295
MISSING = ("", "N/A", "NA", "n/a", "-")
# Accepted spellings per field, with the factor that turns the value into microseconds.
START_COLUMNS = {"Task Start Time(us)": 1.0, "Task Start Time": 1e-3}
DURATION_COLUMNS = {"Task Duration(us)": 1.0, "Task Duration": 1e-3}
BLOCK_COLUMNS = ("Block Dim", "Block Num")
STATISTIC_COLUMNS = ("OP Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)")
# torch_npu's kernel_details.csv: op_summary's rows under its own column names.
KERNEL_DETAILS_COLUMNS = {"Name": "Op Name", "Type": "OP Type", "Accelerator Core": "Task Type",
                          "Start Time(us)": "Task Start Time(us)", "Duration(us)": "Task Duration(us)",
                          "Wait Time(us)": "Task Wait Time(us)", "Step Id": "Infer ID"}
TASK_TIME_COLUMNS = ("kernel_name", "kernel_type", "task_time(us)", "task_start(us)")
FUSION_OP_COLUMNS = ("Fusion Op", "Original Ops")
HARDWARE_PROCESS = "Ascend Hardware"  # the msprof timeline's process of device tasks


@dataclass(frozen=True)
class OpRecord:
    """One row of op_summary (times in microseconds; None where the cell is N/A or invalid)."""

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


def _cell(value: str | None) -> str | None:
    text = (value or "").strip().strip("\t").strip()
    return None if text in MISSING else text


def _number(value: str | None, where: str, column: str) -> float | None:
    text = _cell(value)
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        raise FuseLensError(f"{where}: column {column!r} holds {text!r}, not a number") from None
    return None if number == INVALID else number


def parse_shapes(text: str | None) -> tuple[tuple[int, ...] | None, ...]:
    """`1,224,224,3;64` -> ((1, 224, 224, 3), (64,)); `; ; ; ;` -> five scalars; N/A -> ()."""
    cell = _cell(text)
    if cell is None:
        return ()
    shapes: list[tuple[int, ...] | None] = []
    for part in cell.strip('"').split(";"):
        dims = [d.strip() for d in part.split(",") if d.strip()]
        try:
            shapes.append(tuple(int(d) for d in dims))
        except ValueError:
            shapes.append(None)  # a dynamic or symbolic dim: shape not known
    return tuple(shapes)


def _rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise FuseLensError(f"{path}: not a text CSV file") from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = [c.strip().strip("\t") for c in next(reader)]
    except StopIteration:
        raise FuseLensError(f"{path}: empty file (no header line)") from None
    except csv.Error as e:
        raise FuseLensError(f"{path}, line 1: bad CSV ({e})") from None
    while header and not header[-1]:
        header.pop()
    rows = []
    try:
        for row in reader:
            if any(c.strip() for c in row):
                rows.append((reader.line_num, row))
    except csv.Error as e:
        raise FuseLensError(f"{path}, line {reader.line_num}: bad CSV ({e})") from None
    return header, rows


def _table(path: Path, columns: Sequence[str]) -> tuple[dict[str, int], list[tuple[int, str, list[str]]]]:
    """A CSV with these columns required: column -> index, and its rows with their line and where
    each is ("file, line N"); a row with fewer cells than the header is an error naming it."""
    header, rows = _rows(path)
    for column in columns:
        _column(header, path, (column,))
    table = []
    for line, row in rows:
        where = f"{path}, line {line}"
        if len(row) < len(header):
            raise FuseLensError(f"{where}: {len(row)} cells, the header has {len(header)}")
        table.append((line, where, row))
    return {name: i for i, name in enumerate(header)}, table


def _column(header: list[str], path: Path, choices: dict[str, float] | tuple[str, ...]) -> str:
    for name in choices:
        if name in header:
            return name
    raise FuseLensError(f"{path}: no {' or '.join(repr(c) for c in choices)} column in the header")


def read_op_summary(path: str | os.PathLike[str]) -> list[OpRecord]:
    """The rows of one op_summary CSV; a malformed row is a FuseLensError naming the file and line."""
    path = Path(path)
    header, rows = _rows(path)
    if "Op Name" not in header and "Name" in header:  # torch_npu's kernel_details.csv
        header = [KERNEL_DETAILS_COLUMNS.get(column, column) for column in header]
    for required in ("Op Name", "OP Type"):
        _column(header, path, (required,))
    start_col = _column(header, path, START_COLUMNS)
    dur_col = _column(header, path, DURATION_COLUMNS)
    block_col = next((c for c in BLOCK_COLUMNS if c in header), None)
    index = {name: i for i, name in enumerate(header)}
    records = []
    for line, row in rows:
        while len(row) > len(header) and not row[-1].strip():
            row = row[:-1]
        where = f"{path}, line {line}"
        if len(row) != len(header):
            raise FuseLensError(f"{where}: {len(row)} cells, the header has {len(header)}")
        get = {name: row[i] for name, i in index.items()}
        name = _cell(get["Op Name"])
        if name is None:
            raise FuseLensError(f"{where}: empty 'Op Name'")
        start = _number(get[start_col], where, start_col)
        duration = _number(get[dur_col], where, dur_col)
        if start is None or duration is None:
            continue  # a task msprof could not time: nothing to add to a timing table
        if duration < 0:
            raise FuseLensError(f"{where}: negative {dur_col!r} ({duration})")
        block = _number(get.get(block_col), where, block_col) if block_col else None
        infer = _number(get.get("Infer ID"), where, "Infer ID") if "Infer ID" in get else None
        records.append(OpRecord(
            line=line, name=name, op_type=_cell(get["OP Type"]) or "", task_type=_cell(get.get("Task Type")) or "",
            device=f"npu:{_cell(get.get('Device_id')) or 0}", start_us=start * START_COLUMNS[start_col],
            dur_us=duration * DURATION_COLUMNS[dur_col], block_dim=None if block is None else int(block),
            input_shapes=parse_shapes(get.get("Input Shapes")), infer_id=None if infer is None else int(infer)))
    return records


def _steps(records: list[OpRecord]) -> list[int]:
    """A step index per record: `Infer ID` when present, else a new step at each repeat of the first kernel."""
    if records and all(r.infer_id is not None for r in records):
        return [int(r.infer_id) for r in records]  # type: ignore[arg-type]
    first = records[0].name if records else None
    step, steps = -1, []
    for record in records:
        step += record.name == first
        steps.append(max(step, 0))
    return steps


def graph_run_from_records(label: str, records: list[OpRecord], graph: Graph | None = None) -> GraphRun:
    """The kernel table, step times and last-step timeline of op_summary rows (start-time order)."""
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


def read_op_statistic(path: str | os.PathLike[str], label: str = "imported") -> GraphRun:
    """op_statistic rows (one per op type) as a kernel table; it has no timeline and no step count."""
    path = Path(path)
    index, rows = _table(path, STATISTIC_COLUMNS)
    kernels = []
    for _line, where, row in rows:
        value = {c: _number(row[index[c]], where, c) for c in STATISTIC_COLUMNS[1:]}
        if value["Count"] is None or value["Total Time(us)"] is None:
            raise FuseLensError(f"{where}: 'Count' and 'Total Time(us)' must be numbers")
        op_type = _cell(row[index["OP Type"]]) or ""
        core = _cell(row[index["Core Type"]]) if "Core Type" in index else None
        kernels.append(KernelStat(
            kernel=op_type, op_type=op_type, node=None, pass_id=None, device=core or "npu",
            count=int(value["Count"]), total_us=value["Total Time(us)"],
            mean_us=value["Avg Time(us)"] or value["Total Time(us)"] / max(value["Count"], 1),
            min_us=value["Min Time(us)"] or 0.0, max_us=value["Max Time(us)"] or 0.0))
    kernels.sort(key=lambda k: (-k.total_us, k.kernel))
    return GraphRun(label=label, steps=0, kernels=kernels, source="msprof")


# File kinds of an msprof export, in the order a folder's timings are read from (first found wins).
PROFILE_FILES = {
    "op_summary": "op_summary_*.csv",
    "kernel_details": "kernel_details*.csv",
    "task_time": "task_time_*.csv",
    "msprof_json": "msprof_*.json",
    "op_statistic": "op_statistic_*.csv",
    "fusion_op": "fusion_op_*.csv",
}


def find_profile_files(folder: Path) -> dict[str, list[Path]]:
    """The msprof files under `folder` by kind (every slice; mindstudio_profiler_output/ preferred)."""
    return {kind: sorted(folder.glob(f"**/mindstudio_profiler_output/{pattern}"))
            or sorted(folder.glob(f"**/{pattern}")) for kind, pattern in PROFILE_FILES.items()}


def read_task_time(path: str | os.PathLike[str]) -> list[OpRecord]:
    """task_time rows (kernel, task type, start, duration) as records; it names no op type."""
    path = Path(path)
    index, rows = _table(path, TASK_TIME_COLUMNS)
    records = []
    for line, where, row in rows:
        name = _cell(row[index["kernel_name"]])
        start = _number(row[index["task_start(us)"]], where, "task_start(us)")
        duration = _number(row[index["task_time(us)"]], where, "task_time(us)")
        if name is None or start is None or duration is None:
            continue
        device = _cell(row[index["Device_id"]]) if "Device_id" in index else None
        records.append(OpRecord(line=line, name=name, op_type="", task_type=_cell(row[index["kernel_type"]]) or "",
                                device=f"npu:{device or 0}", start_us=start, dur_us=duration, block_dim=None,
                                input_shapes=(), infer_id=None))
    return records


def read_msprof_json(paths: list[Path]) -> list[OpRecord]:
    """The device tasks of msprof's timeline (all slices): `ph: X` events of the "Ascend Hardware" process.

    msprof writes a bare JSON array (no `traceEvents` wrapper, which is accepted too) and `ts` as a
    string of microseconds, so no precision is lost on 1.7e12-us epochs.
    """
    events: list[dict] = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
        except UnicodeDecodeError:
            raise FuseLensError(f"{path}: not UTF-8 text, so not an msprof timeline") from None
        except json.JSONDecodeError as e:
            raise FuseLensError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from None
        data = data.get("traceEvents") if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise FuseLensError(f"{path}: not an msprof timeline (expected a JSON array of trace events)")
        events += [e for e in data if isinstance(e, dict)]
    hardware = {_pid(e) for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                and isinstance(e.get("args"), dict) and e["args"].get("name") == HARDWARE_PROCESS} - {None}
    records = []
    for i, event in enumerate(events):
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if event.get("ph") != "X" or not (_pid(event) in hardware or (not hardware and "Task Type" in args)):
            continue
        where = f"{paths[0]}, event {i}"
        start, duration = _number(str(event.get("ts")), where, "ts"), _number(str(event.get("dur")), where, "dur")
        if start is None or duration is None or not event.get("name"):
            continue
        records.append(OpRecord(line=i, name=str(event["name"]), op_type="", task_type=str(args.get("Task Type", "")),
                                device="npu:0", start_us=start, dur_us=duration, block_dim=None, input_shapes=(),
                                infer_id=None))
    return records


def _pid(event: dict) -> int | str | None:
    """A trace event's process id; None unless a number or a string (a JSON list or object is no id)."""
    pid = event.get("pid")
    return pid if isinstance(pid, (int, float, str)) and not isinstance(pid, bool) else None


@dataclass(frozen=True)
class FusionOpRecord:
    """One row of fusion_op: a fused op the toolchain built and the original ops it replaced."""

    line: int
    model: str
    fusion_op: str
    original_ops: tuple[str, ...]
    memory_total_kb: float | None


def read_fusion_op(path: str | os.PathLike[str]) -> list[FusionOpRecord]:
    """fusion_op rows; `Original Ops` is `;`-separated (older exports used `,`)."""
    path = Path(path)
    index, rows = _table(path, FUSION_OP_COLUMNS)
    records = []
    for line, where, row in rows:
        fused = _cell(row[index["Fusion Op"]])
        if fused is None:
            raise FuseLensError(f"{where}: empty 'Fusion Op'")
        originals = tuple(o.strip() for o in (_cell(row[index["Original Ops"]]) or "").replace(",", ";").split(";")
                          if o.strip())
        total = _number(row[index["Memory Total(KB)"]], where, "Memory Total(KB)") \
            if "Memory Total(KB)" in index else None
        model = _cell(row[index["Model Name"]]) if "Model Name" in index else None
        records.append(FusionOpRecord(line, model or "", fused, originals, total))
    return records


def _records(kind: str, files: list[Path]) -> list[OpRecord]:
    if kind == "task_time":
        return [r for f in files for r in read_task_time(f)]
    if kind == "msprof_json":
        return read_msprof_json(files)
    return [r for f in files for r in read_op_summary(f)]


def _file_kind(path: Path) -> str:
    for kind, pattern in PROFILE_FILES.items():
        if path.match(pattern):
            return kind
    return "op_summary"


def import_graph_run(path: str | os.PathLike[str], label: str = "imported", graph: Graph | None = None) -> GraphRun:
    """One run from an msprof file (op_summary, kernel_details, task_time, msprof JSON, op_statistic) or a
    folder holding them; a folder's timings come from the first kind present in PROFILE_FILES order."""
    path = Path(path)
    if not path.exists():
        raise FuseLensError(f"{path}: no such file or directory")
    if path.is_file():
        kind = _file_kind(path)
        if kind == "fusion_op":
            raise FuseLensError(f"{path}: fusion_op lists fused ops and their original ops, not timings; "
                                "give the PROF_* folder (or op_summary) to import timings")
        if kind == "op_statistic":
            return read_op_statistic(path, label)
        return graph_run_from_records(label, _records(kind, [path]), graph)
    found = find_profile_files(path)
    for kind in ("op_summary", "kernel_details", "task_time", "msprof_json"):
        if found[kind]:
            records = _records(kind, found[kind])
            if records:
                return graph_run_from_records(label, records, graph)
    if found["op_statistic"]:
        return read_op_statistic(found["op_statistic"][0], label)
    raise FuseLensError(f"{path}: no op_summary_*.csv or op_statistic_*.csv inside (nor kernel_details.csv, "
                        "task_time_*.csv or msprof_*.json); run `msprof --export=on --output=PROF_...` first")


def import_profile(path: str | os.PathLike[str], graphs: dict[str, Graph] | None = None) -> RunResult:
    """A RunResult from msprof output; a folder with `original/` and `fused/` runs gives both."""
    path = Path(path)
    graphs = graphs or {}
    labels = [name for name in ("original", "fused") if (path / name).is_dir()] if path.is_dir() else []
    runs = {name: import_graph_run(path / name, name, graphs.get(name)) for name in labels} if len(labels) == 2 \
        else {"imported": import_graph_run(path, "imported", graphs.get("imported"))}
    steps = max((r.steps for r in runs.values()), default=0)
    return RunResult(model=str(path), backend="npu (msprof import)", steps=steps, warmup=0, traced=True, graphs=runs)
