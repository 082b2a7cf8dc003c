"""The files FuseLens ships beside its code, found as package data through importlib.resources.

Samples, rule files and op tables (resources/), the TensorFlow op tables of the NPU targets, the
GE IR schema and the scripts FuseLens copies to an Ascend host: a wheel installed in site-packages
finds them as a source checkout does. Caches (built samples) live in the user cache folder instead.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from fuselens.core.errors import FuseLensError

PACKAGE = "fuselens"


def package_file(package: str, *parts: str) -> Path:
    """A file or folder in a package's folder, e.g. `package_file(__package__, "tf_targets")`."""
    found = files(package).joinpath(*parts)
    if not isinstance(found, Path):
        raise FuseLensError(f"{package} is installed inside an archive; FuseLens needs its files on disk "
                            f"(pip install it as a wheel or from a checkout)")
    return found.resolve()


def resource(*parts: str) -> Path:
    """A file or folder under resources/ (fuselens/resources in a wheel)."""
    return package_file(PACKAGE, "resources", *parts)


def import_root() -> Path:
    """The folder `fuselens` is imported from: a checkout root, or site-packages."""
    return package_file(PACKAGE).parent


def child_environ(**overrides: str) -> dict[str, str]:
    """The environment of a child Python process that runs this same fuselens (import_root() first on
    PYTHONPATH), so a checkout started as `python main.py` without an install starts its children too."""
    path = os.pathsep.join(filter(None, [str(import_root()), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **overrides, "PYTHONPATH": path}
