"""A folder of GE graph dumps as timelines: per process and graph id, its stages in order.

GE names each dump `ge_<proto|onnx|readable>_<index>_[aclop_]graph_<graphId>_<Stage>.<txt|pbtxt>`
(the index is a per-process, per-format counter: 8 digits in current GE, 5 in older ones and in
AutoFuse's own dumps; `aclop_` marks single-operator graphs). Some GE versions leave the graph part
out (`ge_proto_00000000_Build.txt`, `ge_onnx_00007_PreRunBegin.pbtxt`). A file whose name says none
of this (a user renamed it) is taken as a dump when its content is one (`dump.head_format`): its
stage is its file name, and it comes after the indexed stages. With DUMP_GRAPH_PATH set, each process
writes into `pid_<pid>_deviceid_<device>/`, so a folder may hold several processes, and a process
several graphs (a TF session compiles more than one). The ge_proto and ge_onnx dumps of one
stage are two views of the same graph; the ge_proto one is read when both are there, since the
onnx one drops string attributes below DUMP_GE_GRAPH=1.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.ascend.ge.dump import GE_ONNX, GE_PROTO, HEAD_BYTES, GeDump, head_format, load_dump
from fuselens.core.errors import FuseLensError

DUMP_NAME = re.compile(r"^ge_(proto|onnx|readable)_(\d+)_(?:(aclop_)?graph_(\d+)_)?(.+)\.(txt|pbtxt)$")
PROCESS_FOLDER = re.compile(r"^pid_(\d+)_deviceid_(\d+)$")
MAX_DEPTH = 3  # DUMP_GRAPH_PATH/pid_*_deviceid_*/ and a level of the user's own on top
FORMAT_PREFERENCE = (GE_PROTO, GE_ONNX)


@dataclass(frozen=True)
class DumpFile:
    """One dump file, as its name describes it (or, for a renamed file, as its content does)."""

    path: Path
    format: str  # ge_proto | ge_onnx | ge_readable
    index: int | None  # None: a renamed file, whose name holds no index
    width: int  # digits of the index: 8 (current GE) or 5 (older GE, AutoFuse); 0 without one
    graph_id: str | None  # None when the name has no graph part
    stage: str
    aclop: bool = False

    @property
    def order(self) -> tuple[int, int, str]:
        """Where the file sorts in its timeline: by index, the renamed files after, by name."""
        return (self.index is None, self.index or 0, self.path.name)


def parse_dump_name(path: str | os.PathLike[str]) -> DumpFile | None:
    """The parts of a dump file's name, or None when the name is not a GE dump's."""
    path = Path(path)
    found = DUMP_NAME.match(path.name)
    if found is None:
        return None
    kind, index, aclop, graph_id, stage, _ = found.groups()
    return DumpFile(path, f"ge_{kind}", int(index), len(index), graph_id, stage, bool(aclop))


def dump_by_content(path: Path) -> DumpFile | None:
    """A file whose name is not a dump's, as a dump when its first 64 KiB are one's; else None."""
    try:
        with open(path, "rb") as f:
            kind = head_format(f.read(HEAD_BYTES))
    except OSError:
        return None
    return None if kind is None else DumpFile(path, kind, None, 0, None, path.stem)


@dataclass
class Stage:
    """One stage of one graph: its dump files (one per format) and its place in the timeline."""

    process: str  # the folder it was found in, relative to the scanned folder ("" for the folder itself)
    graph_id: str | None
    name: str
    occurrence: int  # 1 for the first dump of this stage name in this graph, 2 for the next, ...
    files: dict[str, DumpFile] = field(default_factory=dict)

    @property
    def index(self) -> int | None:
        return self.file.index

    @property
    def index_label(self) -> str:
        """The dump index as shown, `-` for a renamed file that has none."""
        return "-" if self.index is None else str(self.index)

    @property
    def file(self) -> DumpFile:
        """The file to read: ge_proto when there is one (it keeps string attributes), else ge_onnx."""
        return next(self.files[f] for f in FORMAT_PREFERENCE if f in self.files)

    @property
    def label(self) -> str:
        """The stage name, with `#N` from the second dump of the same name on."""
        return self.name if self.occurrence == 1 else f"{self.name}#{self.occurrence}"

    def load(self) -> GeDump:
        return load_dump(self.file.path, self.file.format)

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.label, "index": self.index, "graph_id": self.graph_id, "process": self.process,
                "files": {fmt: str(f.path) for fmt, f in self.files.items()},
                "index_width": self.file.width, "aclop": self.file.aclop}


@dataclass
class Timeline:
    """The stages of one graph in one process, in the order GE dumped them."""

    process: str
    graph_id: str | None
    stages: list[Stage]

    @property
    def label(self) -> str:
        """`graph 11`; without a graph id, whether old GE's 5-digit names left it out or the names say nothing
        (current GE's `ge_proto_00000000_Build.txt`, renamed files)."""
        if self.graph_id is not None:
            graph = f"graph {self.graph_id}"
        elif self.stages and all(s.file.width == 5 for s in self.stages):
            graph = "graph (no id: old GE)"
        else:
            graph = "graph (no id in the file names)"
        return f"{self.process} {graph}" if self.process else graph

    def to_json(self) -> dict[str, Any]:
        return {"process": self.process, "graph_id": self.graph_id, "label": self.label,
                "stages": [s.to_json() for s in self.stages]}


@dataclass
class StageLoad:
    """A stage, loaded: the dump, or the one-line error that kept it from loading."""

    stage: Stage
    dump: GeDump | None
    error: str | None


@dataclass
class DumpFolder:
    """Every GE dump under a folder, as timelines; files not read are listed with the reason."""

    path: Path
    timelines: list[Timeline]
    skipped: list[str] = field(default_factory=list)

    def stages(self) -> list[Stage]:
        return [s for t in self.timelines for s in t.stages]

    def find(self, spec: str) -> Stage:
        """A stage by `STAGE`, `STAGE#N` (its N-th dump), `GRAPH_ID/STAGE`, `PROCESS/GRAPH_ID/STAGE`, a dump
        index, or a file name.

        A spec that fits stages of several graphs or processes is an error naming them, never a guess.
        """
        parts = spec.strip().split("/")
        name = parts[-1]
        graph_id = parts[-2] if len(parts) > 1 else None
        process = "/".join(parts[:-2]) if len(parts) > 2 else None
        candidates = [s for s in self.stages() if (graph_id is None or s.graph_id == graph_id)
                      and (process is None or s.process == process)]
        if name.isdigit():
            found = [s for s in candidates if any(f.index == int(name) for f in s.files.values())]
        else:
            found = [s for s in candidates if name in (s.label, *(f.path.name for f in s.files.values()))]
        if len(found) == 1:
            return found[0]
        if not found:
            known = ", ".join(dict.fromkeys(s.label for s in candidates[:40])) or "none"
            graph = f" of graph {graph_id}" if graph_id is not None else ""
            raise FuseLensError(f"{self.path}: no stage {name!r}{graph} (stages: {known})")
        where = "; ".join(f"{s.label} in {Timeline(s.process, s.graph_id, []).label} (index {s.index})"
                          for s in found[:6])
        raise FuseLensError(f"{self.path}: {spec!r} names {len(found)} dumps ({where}); name one as "
                            f"DIR:GRAPH_ID/STAGE, by its index, or point DIR at one pid_*_deviceid_* folder")

    def load_all(self) -> list[StageLoad]:
        """Every stage, each loaded on its own: a bad file is reported and the others still load."""
        loads = []
        for stage in self.stages():
            try:
                loads.append(StageLoad(stage, stage.load(), None))
            except FuseLensError as e:
                loads.append(StageLoad(stage, None, str(e)))
        return loads

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "timelines": [t.to_json() for t in self.timelines], "skipped": self.skipped}


def _dump_folders(root: Path) -> list[Path]:
    """The folder and its subfolders (pid_*_deviceid_* and the like, a few levels down), in name order."""
    found = [root]
    frontier = [root]
    for _ in range(MAX_DEPTH):
        frontier = sorted(p for folder in frontier for p in folder.iterdir() if p.is_dir())
        found += frontier
    return found


def scan_dump_folder(path: str | os.PathLike[str]) -> DumpFolder:
    """The timelines of every graph dumped under `path`; FuseLensError when there is no dump at all."""
    root = Path(path)
    if not root.exists():
        raise FuseLensError(f"{root}: no such file or directory")
    if not root.is_dir():
        raise FuseLensError(f"{root}: is a file; give the folder of GE dumps (DUMP_GRAPH_PATH)")
    files: dict[tuple[str, str | None], list[DumpFile]] = defaultdict(list)
    skipped = []
    try:
        folders = _dump_folders(root)
    except OSError as e:
        raise FuseLensError(f"{root}: cannot list ({e.strerror})") from None
    for folder in folders:
        process = "" if folder == root else folder.relative_to(root).as_posix()
        for entry in sorted(folder.iterdir()):
            if not entry.is_file():
                continue
            dump = parse_dump_name(entry) or dump_by_content(entry)
            if dump is None:
                continue
            if dump.format not in FORMAT_PREFERENCE:
                skipped.append(f"{entry}: {dump.format} dumps are for reading, not loading; "
                               "FuseLens reads the ge_proto and ge_onnx dumps")
                continue
            files[(process, dump.graph_id)].append(dump)
    if not files:
        raise FuseLensError(f"{root}: no GE graph dumps (ge_proto_*.txt or ge_onnx_*.pbtxt) here or in its "
                            "pid_*_deviceid_* folders; run with DUMP_GE_GRAPH=2 and DUMP_GRAPH_PATH set")
    timelines = [Timeline(process, graph_id, _stages(process, graph_id, group))
                 for (process, graph_id), group in sorted(files.items(), key=lambda kv: _timeline_key(*kv[0]))]
    return DumpFolder(root, timelines, skipped)


def _timeline_key(process: str, graph_id: str | None) -> tuple[str, int]:
    return process, -1 if graph_id is None else int(graph_id)


def _stages(process: str, graph_id: str | None, files: list[DumpFile]) -> list[Stage]:
    """Pair the formats' dumps of a stage by (stage name, occurrence), ordered by dump index."""
    by_key: dict[tuple[str, int], Stage] = {}
    for fmt in FORMAT_PREFERENCE:
        seen: dict[str, int] = defaultdict(int)
        for dump in sorted((f for f in files if f.format == fmt), key=lambda f: f.order):
            seen[dump.stage] += 1
            key = (dump.stage, seen[dump.stage])
            stage = by_key.setdefault(key, Stage(process, graph_id, dump.stage, seen[dump.stage]))
            stage.files[fmt] = dump
    return sorted(by_key.values(), key=lambda s: (s.file.order, s.name))
