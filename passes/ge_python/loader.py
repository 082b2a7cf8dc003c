"""Loading pass files as GE loads them, with the user's errors as data.

`ASCEND_GE_PY_PASS_PATH=path1:path2`: each entry a `.py` file or a directory (entries split on ':',
blanks dropped); in a directory, names starting with `_` are skipped, `.py` files load as modules and
sub-directories with an `__init__.py` as packages (with the directory on sys.path while they import);
a file reached twice loads once. A file loads as a fresh module on every load (a hot reload sees the
edit), named `_ge_py_pass_<stem>_<n>` as GE names its plugin modules.

A user's exception (a syntax error, a failed import, a duplicate pass name, an error in a hook) never
escapes: it becomes a `UserCodeError` with the user's file, line and a traceback of the user's own
frames only (FuseLens's frames are not theirs to read).
"""

from __future__ import annotations

import importlib.util
import itertools
import linecache
import os
import sys
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from fuselens.passes.ge_python.api.hooks import Registration, take_registrations
from fuselens.passes.ge_python.api.missing import take_asked
from fuselens.passes.ge_python.scope import API_NAME, ge_importable, real_ge

ENV_PASS_PATH = "ASCEND_GE_PY_PASS_PATH"
MODULE_PREFIX = "_ge_py_pass_"
_module_numbers = itertools.count()


@dataclass(frozen=True)
class UserCodeError:
    """An exception in the user's pass code: where (their file and line), in which phase ("load",
    "patterns", "meet_requirements", "replacement", "run"), the message and their frames."""

    file: str
    line: int
    phase: str
    message: str  # "NameError: name 'x' is not defined"
    traceback: str = ""  # the user's frames, formatted as Python does, and the exception line
    pass_name: str = ""
    function: str = ""

    def one_line(self) -> str:
        where = f"{self.file}, line {self.line}" if self.line else self.file
        hook = f" ({self.phase} of {self.pass_name})" if self.pass_name else ""
        return f"{where}: {self.message}{hook}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "phase": self.phase, "message": self.message,
                "traceback": self.traceback, "pass": self.pass_name, "function": self.function}


@dataclass(frozen=True)
class RegisteredPass:
    """A pass a file registered: its name, stage, kind (pattern_fusion, fusion_base, decompose), the file
    and line of its class, its op types (decompose) and the registration itself."""

    name: str
    stage: str  # the PassStage value: "BeforeInferShape", ...
    kind: str
    source: str
    line: int
    class_name: str
    op_types: tuple[str, ...]
    # None in a record read back from JSON (`PassLoad.from_json`): described, not loaded in this process
    registration: Registration | None = field(repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "stage": self.stage, "kind": self.kind, "source": self.source, "line": self.line,
                "class": self.class_name, "op_types": list(self.op_types)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RegisteredPass:
        return cls(data["name"], data["stage"], data["kind"], data["source"], data["line"], data["class"],
                   tuple(data.get("op_types", ())), None)


@dataclass
class PassLoad:
    """What loading some paths gave: the passes registered, in load order; the user's errors; the module
    files loaded; the `ge` APIs asked for that FuseLens lacks; and which `ge` the passes ran against."""

    passes: list[RegisteredPass] = field(default_factory=list)
    errors: list[UserCodeError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    api: str = API_NAME
    real_ge: str | None = None
    roots: tuple[str, ...] = ()  # the files and directories given: frames under them are the user's

    @property
    def ok(self) -> bool:
        return not self.errors

    def ge_note(self) -> str:
        """One line: which `ge` the passes ran against, and the real one FuseLens set aside if any."""
        if self.real_ge is None:
            return f"ran against {self.api}"
        return f"ran against {self.api}; a real ge is importable here ({self.real_ge}) and was set aside"

    def to_json(self) -> dict[str, Any]:
        return {"passes": [p.to_json() for p in self.passes], "errors": [e.to_json() for e in self.errors],
                "files": self.files, "unsupported": self.unsupported, "api": self.api, "real_ge": self.real_ge,
                "roots": list(self.roots)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PassLoad:
        """A load another process made, described (a window shows the passes a helper process loaded, and runs
        none of the user's code itself): its passes have no class here."""
        errors = [UserCodeError(e["file"], e["line"], e["phase"], e["message"], e.get("traceback", ""),
                                e.get("pass", ""), e.get("function", "")) for e in data.get("errors", [])]
        return cls([RegisteredPass.from_json(p) for p in data.get("passes", [])], errors, list(data.get("files", [])),
                   list(data.get("unsupported", [])), data.get("api", API_NAME), data.get("real_ge"),
                   tuple(data.get("roots", ())))


def describe_load_errors(load: PassLoad) -> str:
    """The load's errors for a terminal: a count, then each error's line and the user's own frames."""
    parts = [f"{len(load.errors)} error(s) in GE Python pass files:"]
    for error in load.errors:
        parts.append(f"  {error.one_line()}")
        parts += [f"    {line}" for line in error.traceback.splitlines() if error.traceback != error.message]
    return "\n".join(parts)


def pass_path_entries(value: str) -> list[str]:
    """An ASCEND_GE_PY_PASS_PATH value as its entries (':'-separated, blanks dropped)."""
    return [item.strip() for item in value.split(os.pathsep) if item.strip()]


def load_env_passes(environ: Mapping[str, str] | None = None) -> PassLoad:
    """The passes ASCEND_GE_PY_PASS_PATH names (an empty load when it is unset)."""
    value = (os.environ if environ is None else environ).get(ENV_PASS_PATH, "")
    return load_pass_files(pass_path_entries(value))


def load_pass_files(paths: Iterable[str | Path]) -> PassLoad:
    """Load pass files and directories (GE's rules, see the module docstring) into a PassLoad. Never
    raises for the user's code: every problem is one of `PassLoad.errors`."""
    entries = [Path(p) for p in paths]
    load = PassLoad(real_ge=real_ge(), roots=tuple(str(p.resolve()) for p in entries))
    take_registrations(), take_asked()  # a failed earlier load may have left some
    seen: set[Path] = set()
    with ge_importable():
        for entry in entries:
            for kind, path in _expand(entry, load):
                canonical = path.resolve()
                if canonical in seen:
                    continue
                seen.add(canonical)
                _load_one(kind, path, load)
    load.unsupported = take_asked()
    return load


def _expand(entry: Path, load: PassLoad) -> list[tuple[str, Path]]:
    """One path entry as ("module", file) / ("package", dir) items, or an error record."""
    if not entry.exists():
        load.errors.append(UserCodeError(str(entry), 0, "load", "no such file or directory"))
        return []
    if entry.is_file():
        if entry.suffix != ".py":
            load.errors.append(UserCodeError(str(entry), 0, "load", "a pass file must end with .py"))
            return []
        return [("module", entry)]
    found = []
    for child in sorted(entry.iterdir(), key=lambda p: p.name):
        if child.name.startswith("_"):
            continue
        if child.is_file() and child.suffix == ".py":
            found.append(("module", child))
        elif child.is_dir() and (child / "__init__.py").exists():
            found.append(("package", child))
    return found


def _load_one(kind: str, path: Path, load: PassLoad) -> None:
    """Execute one module or package; what it registered joins `load.passes`, an error `load.errors`."""
    linecache.checkcache(str(path))  # an edited file's lines, not the ones cached from the last load
    try:
        module = _exec_package(path) if kind == "package" else _exec_module(path)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the user's code: anything may come out of it, sys.exit() too
        take_registrations()  # a module that failed half-way registers nothing
        load.errors.append(user_error(error, "load", load.roots))
        return
    origin = module.__spec__.origin if module.__spec__ is not None else None
    load.files.append(str(Path(origin or path).resolve()))
    for registration in take_registrations():
        load.passes.append(RegisteredPass(registration.name, registration.stage.value, registration.kind,
                                          registration.source or str(path), registration.line,
                                          registration.cls.__name__, registration.op_types, registration))
    for earlier in load.passes[:-1]:
        clash = next((p for p in load.passes if p is not earlier and p.name == earlier.name), None)
        if clash is not None:  # two files registered one name: GE refuses the second
            load.passes.remove(clash)
            load.errors.append(UserCodeError(clash.source, clash.line, "load",
                                             f"ValueError: python pass name already exists: {clash.name}"))


def _exec_module(path: Path) -> ModuleType:
    name = f"{MODULE_PREFIX}{path.stem}_{next(_module_numbers)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load python pass file: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _exec_package(path: Path) -> ModuleType:
    """A package by its own name, imported afresh (its earlier modules are dropped first)."""
    name = path.name
    for loaded in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
        del sys.modules[loaded]
    sys.path.insert(0, str(path.parent))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(path.parent))


# ---- the user's errors -------------------------------------------------------------------------
def _is_user_frame(filename: str, roots: tuple[str, ...]) -> bool:
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return any(resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def user_error(error: BaseException, phase: str, roots: tuple[str, ...], pass_name: str = "") -> UserCodeError:
    """An exception from the user's code as a UserCodeError: the deepest user frame is where it happened;
    a SyntaxError is where Python says it is."""
    message = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()[-1]
    frames = [frame for frame in traceback.extract_tb(_traceback_of(error)) if _is_user_frame(frame.filename, roots)]
    if isinstance(error, SyntaxError) and error.filename:
        text = "".join(traceback.format_exception_only(type(error), error))
        return UserCodeError(error.filename, error.lineno or 0, phase, message, text, pass_name)
    if not frames:
        return UserCodeError(roots[0] if roots else "<pass>", 0, phase, message, message, pass_name)
    last = frames[-1]
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) + message
    return UserCodeError(last.filename, last.lineno or 0, phase, message, text, pass_name, last.name)


def _traceback_of(error: BaseException) -> TracebackType | None:
    return error.__traceback__
