"""The user's own `ge.passes` files in a fusion: which files, which of their passes are off, what a run gave.

A fusion of the window with pass files runs in the TensorFlow helper process (user code never runs in the
window's own), as one request: load these files the way GE does, run the pipeline with their passes at
their stages on this graph, return the pipeline, the passes found and the errors in the user's code
(`run_pass_files`, called there). A run past `timeout_s` (an endless loop in a pass) is killed with the
helper, and the window keeps its last good result.
"""

from __future__ import annotations

import json
import linecache
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.graph import Graph
from fuselens.passes.config import PassConfig
from fuselens.passes.ge_python import PassLoad, UserCodeError
from fuselens.passes.pipeline import PipelineResult
from fuselens.passes.registry import find_pass

DEFAULT_TIMEOUT_S = 10.0  # a user's pass that runs longer on a sample is taken for an endless loop


@dataclass(frozen=True)
class PassFiles:
    """Pass files (`.py` files or folders, ASCEND_GE_PY_PASS_PATH's entries) and the user passes switched off."""

    paths: tuple[str, ...] = ()
    off: frozenset[str] = frozenset()
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __bool__(self) -> bool:
        return bool(self.paths)


@dataclass(frozen=True)
class UserPass:
    """A pass a pass file registered: its registered name, its stage, the file it came from."""

    name: str
    stage: str
    file: str
    on: bool = True


@dataclass(frozen=True)
class CodeFrame:
    file: str
    line: int
    function: str
    text: str


@dataclass(frozen=True)
class CodeError:
    """An exception in the user's pass code (or a run that never ended) as the user's own traceback:
    `frames` are their frames only, outermost first (none: the run was cancelled, nothing to point at)."""

    message: str
    frames: tuple[CodeFrame, ...] = ()

    @property
    def where(self) -> tuple[str, int] | None:
        return (self.frames[-1].file, self.frames[-1].line) if self.frames else None


@dataclass
class PassFileRun:
    """What one run of the pass files gave: the pipeline (None when nothing ran, e.g. a file that does not
    load), the passes found, the errors in the user's code, and the `ge` the passes ran against."""

    pipeline: PipelineResult | None
    passes: list[UserPass] = field(default_factory=list)
    errors: list[CodeError] = field(default_factory=list)
    ge: str = ""
    seconds: float = 0.0
    load: dict[str, Any] = field(default_factory=dict)  # the loader's PassLoad as JSON: the passes, described

    def summary(self) -> str:
        names = ", ".join(f"{p.name} ({p.stage}{'' if p.on else ', off'})" for p in self.passes) or "no pass"
        errors = f"; {len(self.errors)} error(s) in the pass code" if self.errors else ""
        against = f"; {self.ge}" if self.ge else ""  # "ran against FuseLens's ge (...)"
        return f"{names}{errors}{against} ({self.seconds * 1000:.0f} ms)"


def cancelled_run(text: str, passes: Sequence[UserPass] = ()) -> PassFileRun:
    """A run that never finished (a timeout, the helper died): its words as the one error, no pipeline."""
    return PassFileRun(None, list(passes), [CodeError(text)])


def run_pass_files(graph: Graph, config: PassConfig, files: PassFiles,
                   progress: Callable[[str], None] = lambda _text: None) -> PassFileRun:
    """Load `files` and run the pipeline with their passes on `graph`, in the process that may run user code
    (the TensorFlow helper for the window). A file that does not load runs nothing: the errors come back
    and no pipeline, so the window keeps its last good result. The pipeline comes back with `config` (the
    caller's: the user's classes stay in this process; the caller describes them, `described_config`)."""
    from fuselens.passes.pipeline import run_pipeline

    start = time.perf_counter()
    loaded = config.with_py_passes(files.paths)
    load = loaded.py_pass_load
    passes = [UserPass(p.name, p.stage, p.source, p.name not in files.off) for p in load.passes]
    errors = [code_error(e) for e in load.errors]
    pipeline = None
    if not errors:
        loaded = loaded.with_passes([p.name for p in passes if not p.on], on=False)
        pipeline = run_pipeline(graph, loaded, progress=lambda pass_id, i, n: progress(
            f"fusing: {pass_id} ({i + 1}/{n})"))
        pipeline.config = config
        errors = [code_error(e) for r in pipeline.results for e in getattr(r, "user_errors", ())]
    return PassFileRun(pipeline, passes, errors, load.ge_note(), time.perf_counter() - start, load.to_json())


def described_config(config: PassConfig, files: PassFiles, run: PassFileRun) -> PassConfig:
    """`config` with the passes a run of `files` found, described and not loaded (nothing of the user's runs
    here): the configuration a pipeline of that run reports with (a fuse report, a lesson, a ledger)."""
    described = config.with_py_load(files.paths, PassLoad.from_json(run.load))
    return described.with_passes([p.name for p in run.passes if not p.on], on=False)


_FRAME = re.compile(r'^  File "(?P<file>.+)", line (?P<line>\d+), in (?P<function>.+)\n(?:    (?P<text>.*)\n)?',
                    re.MULTILINE)


def code_error(error: UserCodeError) -> CodeError:
    """The loader's record of an exception in the user's code, as the panel shows it: its message (and the
    hook it came from), and the user's frames from its traceback, outermost first (a syntax error: the
    line Python names)."""
    hook = f" (in {error.phase} of {error.pass_name})" if error.pass_name else ""
    frames = tuple(CodeFrame(m["file"], int(m["line"]), m["function"], m["text"] or "")
                   for m in _FRAME.finditer(error.traceback))
    if not frames and error.line:
        frames = (CodeFrame(error.file, error.line, error.function or "<module>",
                            linecache.getline(error.file, error.line).strip()),)
    return CodeError(error.message + hook, frames)


# ---- saved pass configurations, as the window reads and writes them ---------------------------------
def config_json(config: PassConfig, files: PassFiles, run: PassFileRun | None) -> dict[str, Any]:
    """The window's pass configuration as `PassConfig.to_json` writes one, its pass files included, with the
    user's passes that were on among `enabled` (as the command line's `--py-pass` configuration has them)."""
    data = config.to_json()
    if files:
        on = [p.name for p in run.passes if p.on] if run is not None else []
        data.update(py_pass_files=list(files.paths), enabled=sorted({*data["enabled"], *on}))
    return data


def load_config(path: str) -> tuple[PassConfig, PassFiles]:
    """A saved pass configuration as the window takes it, its GE Python pass files never loaded here: the
    configuration without them, and them as PassFiles (they run in the TensorFlow helper). Its `enabled`
    names that are no pass without those files are the user's passes: they are left out (the user's passes
    come switched on)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or not data.get("py_pass_files"):
        return PassConfig.load(path), PassFiles()  # it says what is wrong with a file it cannot read
    rest = {k: v for k, v in data.items() if k != "py_pass_files"}
    probe = PassConfig.from_json({**rest, "enabled": []}, path).catalog()
    enabled = [n for n in data.get("enabled", []) if find_pass(probe, n) is not None]
    return PassConfig.from_json({**rest, "enabled": enabled}, path), PassFiles(tuple(data["py_pass_files"]))
