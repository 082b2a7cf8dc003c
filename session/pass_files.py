"""The user's own `ge.passes` files in a fusion: which files, which of their passes are off, what a run gave.

A fusion of the window with pass files runs in the TensorFlow helper process (user code never runs in the
window's own), as one request: load these files the way GE does, run the pipeline with their passes at
their stages on this graph, return the pipeline, the passes found and the errors in the user's code
(`run_pass_files`, called there). A run past `timeout_s` (an endless loop in a pass) is killed with the
helper, and the window keeps its last good result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fuselens.core.graph import Graph
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult

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

    def summary(self) -> str:
        names = ", ".join(f"{p.name} ({p.stage}{'' if p.on else ', off'})" for p in self.passes) or "no pass"
        errors = f"; {len(self.errors)} error(s) in the pass code" if self.errors else ""
        against = f"; against {self.ge}" if self.ge else ""
        return f"{names}{errors}{against} ({self.seconds * 1000:.0f} ms)"


def cancelled_run(text: str, passes: Sequence[UserPass] = ()) -> PassFileRun:
    """A run that never finished (a timeout, the helper died): its words as the one error, no pipeline."""
    return PassFileRun(None, list(passes), [CodeError(text)])


def run_pass_files(graph: Graph, config: PassConfig, files: PassFiles,
                   progress: Callable[[str], None] = lambda _text: None) -> PassFileRun:
    """Load `files` and run the pipeline with their passes on `graph` (in the process that may run user
    code: the TensorFlow helper for the window, the CLI's own)."""
    from fuselens.passes.ge_python import run_with_pass_files

    start = time.perf_counter()
    outcome: Any = run_with_pass_files(graph, config, files.paths, off=files.off, progress=progress)
    return PassFileRun(outcome.pipeline, [UserPass(p.name, p.stage, p.file, p.name not in files.off)
                                          for p in outcome.passes],
                       [CodeError(e.message, tuple(CodeFrame(*f) for f in e.frames)) for e in outcome.errors],
                       outcome.ge, time.perf_counter() - start)
