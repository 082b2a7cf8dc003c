"""Any graph FuseLens can show, named the way the command line names it.

`MODEL` (a file, SavedModel directory or sample name), a GE dump file, or `DIR:STAGE` for one
stage of a dump folder (`DIR:PreRunBegin`, `DIR:1/Build`, `DIR:00000012`). The CLI's `diff` and
the window's stage picker both resolve names here.
"""

from __future__ import annotations

from pathlib import Path

from fuselens.core.ascend.ge.dump import is_dump, load_dump
from fuselens.core.ascend.ge.stages import scan_dump_folder
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import Graph


def open_graph(spec: str) -> tuple[Graph, str]:
    """(graph, a short label) for a model, a dump file or `DIR:STAGE`."""
    path = Path(spec)
    if path.exists():
        if is_dump(path):
            return load_dump(path).graph, path.name
        return load_model(spec).graph, path.name or spec
    folder, sep, stage = spec.rpartition(":")
    if sep and folder and Path(folder).is_dir():
        found = scan_dump_folder(folder).find(stage)
        return found.load().graph, f"{Path(folder).name}:{found.label}"
    if sep and folder and not Path(folder).exists():
        raise FuseLensError(f"{folder}: no such directory (in {spec!r}; DIR:STAGE names a stage of a dump folder)")
    return load_model(spec).graph, spec
