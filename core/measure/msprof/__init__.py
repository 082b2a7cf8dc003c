"""Import msprof / torch_npu profiling results into the same kernel-table form as a TF run.

One reader per file kind, each deciding from a file's first bytes whether the file is its kind
(`recognises`), never from the file's name (users rename files, torch_npu writes `op_statistic.csv`,
`kernel_details.csv`, `trace_view.json` with no timestamp): op_summary.py (every column scheme),
kernel_details.py (torch_npu's names), task_time.py, timeline.py (`msprof_*.json`,
`trace_view.json`), op_statistic.py (per-type totals), fusion_op.py (fused op -> original ops, not a
timing). Cell quirks are the CSV layer's (core/measure/profile_csv.py). A folder, such as `PROF_*`,
its `mindstudio_profiler_output/` or torch_npu's `ASCEND_PROFILER_OUTPUT/`, opens as one run; large
exports are sliced into several files of one kind, read together; a folder holding `original/` and
`fused/` runs (as the exported NPU script writes them) gives both. core/ascend/sniff.py dispatches a
single file among these and every other kind FuseLens reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof import fusion_op, kernel_details, op_statistic, op_summary, task_time, timeline
from fuselens.core.measure.msprof.op_summary import OpRecord, graph_run_from_records
from fuselens.core.measure.profile_csv import read_head
from fuselens.core.measure.result import GraphRun, RunResult

# The profile readers, in the order a folder's timings are taken from (the first kind present wins).
READERS = (op_summary, kernel_details, task_time, timeline, op_statistic, fusion_op)
TIMINGS = (op_summary.KIND, kernel_details.KIND, task_time.KIND, timeline.KIND)
# Where the toolchain puts its exports inside a run's folder, preferred in this order over other copies.
EXPORT_FOLDERS = ("mindstudio_profiler_output", "ASCEND_PROFILER_OUTPUT")
RAW_FOLDERS = frozenset({"data", "sqlite"})  # msprof's raw binaries: never profiles, often thousands of files
EXPECTED = "op_summary, kernel_details, task_time, op_statistic or fusion_op columns, or a trace-event timeline"


def profile_kind(head: bytes) -> str | None:
    """The profile kind whose reader recognises a file's first bytes, None if none does."""
    return next((reader.KIND for reader in READERS if reader.recognises(head)), None)


def find_profile_files(folder: Path) -> dict[str, list[Path]]:
    """The profile files under `folder` by kind, decided by content; of a kind found in an export folder
    (mindstudio_profiler_output/, then ASCEND_PROFILER_OUTPUT/) only those, so a copy is not read twice."""
    found: dict[str, list[Path]] = {reader.KIND: [] for reader in READERS}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or RAW_FOLDERS & set(path.relative_to(folder).parts[:-1]):
            continue
        try:
            kind = profile_kind(read_head(path))
        except FuseLensError:
            continue  # unreadable: not this run's profile
        if kind is not None:
            found[kind].append(path)
    for kind, paths in found.items():
        for export in EXPORT_FOLDERS:
            inside = [p for p in paths if export in p.parts]
            if inside:
                found[kind] = inside
                break
    return found


def read_records(kind: str, files: list[Path]) -> list[OpRecord]:
    """The timed device tasks of files of one timing kind (a timeline's slices read together)."""
    if kind == timeline.KIND:
        return timeline.read_timeline(files)
    read = {op_summary.KIND: op_summary.read_op_summary, kernel_details.KIND: kernel_details.read_kernel_details,
            task_time.KIND: task_time.read_task_time}[kind]
    return [r for f in files for r in read(f)]


def graph_run_of(kind: str, files: list[Path], label: str = "imported", graph: Graph | None = None) -> GraphRun:
    """One run from files of one profile kind (fusion_op holds no timings: a one-line error)."""
    if kind == fusion_op.KIND:
        raise FuseLensError(f"{files[0]}: fusion_op lists fused ops and their original ops, not timings; "
                            "give the PROF_* folder (or op_summary) to import timings")
    if kind == op_statistic.KIND:
        return op_statistic.read_op_statistic(files[0], label)
    records = read_records(kind, files)
    if kind == timeline.KIND and not records:  # e.g. a Chrome trace of a TF run (`fuselens run --trace`)
        raise FuseLensError(f"{files[0]}: a trace-event timeline with no device kernels (msprof's and torch_npu's "
                            f"are the tasks of the \"{timeline.HARDWARE_PROCESS}\" process)")
    return graph_run_from_records(label, records, graph)


def import_graph_run(path: str | os.PathLike[str], label: str = "imported", graph: Graph | None = None) -> GraphRun:
    """One run from a profile file or a folder holding them; a folder's timings come from the first kind of
    TIMINGS present that has timed rows, else its op_statistic."""
    path = Path(path)
    if not path.exists():
        raise FuseLensError(f"{path}: no such file or directory")
    if path.is_file():
        kind = profile_kind(read_head(path))
        if kind is None:
            raise FuseLensError(f"{path}: not a profile FuseLens reads (expected {EXPECTED})")
        return graph_run_of(kind, [path], label, graph)
    found = find_profile_files(path)
    for kind in TIMINGS:
        if found[kind]:
            records = read_records(kind, found[kind])
            if records:
                return graph_run_from_records(label, records, graph)
    if found[op_statistic.KIND]:
        return op_statistic.read_op_statistic(found[op_statistic.KIND][0], label)
    raise FuseLensError(f"{path}: no op_summary_*.csv or op_statistic_*.csv inside (nor kernel_details.csv, "
                        "task_time_*.csv or a msprof_*.json / trace_view.json timeline; read by content, whatever "
                        "their names); run `msprof --export=on --output=PROF_...` first")


def import_profile(path: str | os.PathLike[str], graphs: dict[str, Graph] | None = None) -> RunResult:
    """A RunResult from msprof output; a folder with `original/` and `fused/` runs gives both."""
    path = Path(path)
    graphs = graphs or {}
    labels = [name for name in ("original", "fused") if (path / name).is_dir()] if path.is_dir() else []
    runs = {name: import_graph_run(path / name, name, graphs.get(name)) for name in labels} if len(labels) == 2 \
        else {"imported": import_graph_run(path, "imported", graphs.get("imported"))}
    steps = max((r.steps for r in runs.values()), default=0)
    return RunResult(model=str(path), backend="npu (msprof import)", steps=steps, warmup=0, traced=True, graphs=runs)
