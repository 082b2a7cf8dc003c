"""The models an audit's PATHs name: files, sample names, and folders searched recursively for every
format FuseLens loads (SavedModel directories included, not entered)."""

from __future__ import annotations

import os
from pathlib import Path

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import HDF5_MAGIC, ZIP_MAGIC, _is_keras_zip
from fuselens.core.formats.samples import SAMPLES

# A file with one of these endings is audited whatever it holds (a broken one is a row with its reason);
# any other file in a folder only when its content is a model the loaders detect without doubt.
MODEL_SUFFIXES = (".pb", ".pbtxt", ".keras", ".h5", ".hdf5")


def is_savedmodel_dir(path: Path) -> bool:
    return (path / "saved_model.pb").exists() or (path / "saved_model.pbtxt").exists()


def _is_model_file(path: Path) -> bool:
    if path.name.lower().endswith(MODEL_SUFFIXES):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head.startswith(HDF5_MAGIC) or (head.startswith(ZIP_MAGIC) and _is_keras_zip(path))


def _walk(folder: Path) -> list[Path]:
    """The models under `folder`, in name order; a SavedModel directory is one model."""
    found = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        saved = [d for d in dirs if is_savedmodel_dir(here / d)]
        found += [here / d for d in saved]
        dirs[:] = sorted(d for d in dirs if d not in saved and not d.startswith("."))
        found += [here / f for f in files if not f.startswith(".") and _is_model_file(here / f)]
    return sorted(found)


def collect_models(paths: list[str]) -> list[tuple[str, str]]:
    """(row name, what load_model reads) per model, in the order given; names are unique. A path that names
    nothing is kept: its row says so."""
    found: list[tuple[str, str]] = []
    for text in paths:
        path = Path(text)
        if not path.exists() and text in SAMPLES:
            found.append((text, text))
        elif path.is_dir() and not is_savedmodel_dir(path):
            models = _walk(path)
            if not models:
                raise FuseLensError(f"{text}: no model found in the folder (formats: a GraphDef .pb or .pbtxt, "
                                    "a SavedModel directory, a Keras .keras or .h5)")
            found += [(str(Path(path.name) / m.relative_to(path)), str(m.resolve())) for m in models]
        else:
            found.append((text, str(path.resolve()) if path.exists() else text))
    names: dict[str, int] = {}
    unique = []
    for name, spec in found:
        names[name] = names.get(name, 0) + 1
        unique.append((name if names[name] == 1 else f"{name} ({names[name]})", spec))
    return unique
