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
from fuselens.core.formats.loaders import LoadedModel, load_model
from fuselens.core.graph import Graph

GE_DUMP_FORMAT = "ge_dump"


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


def load_as_model(spec: str) -> LoadedModel:
    """A model, or a GE dump file opened as one (format "ge_dump", weights read): the graph the host's GE had
    at that stage, for the passes (a user's GE Python pass above all) to be tried on; it runs only on the host."""
    path = Path(spec)
    if path.is_file() and is_dump(path):
        return LoadedModel(load_dump(path, weights=True).graph, path.name, spec, GE_DUMP_FORMAT)
    return load_model(spec)
