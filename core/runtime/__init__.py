"""Compile and run: original vs fused graph in a child process, numeric comparison, per-kernel profile.

Qt-free: the GUI and the CLI both call `start_run(RunRequest(...), on_progress)` and read a
`RunResult`, which saves to and loads from JSON ("a previous FuseLens run file").

The names below import their modules when first asked for: `fuse` reads a fusion switch file through
core.formats.switch_file, and importing the package must not bring the runner in with it (multiprocessing,
subprocess and the result model: 2.9 MB of a fuse process's RSS).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fuselens.core.measure.result import GraphRun, KernelStat, OutputComparison, RunResult, TimelineEvent
    from fuselens.core.runtime.runner import Progress, RunHandle, RunRequest, run, start_run

_MODULES = {
    **dict.fromkeys(["GraphRun", "KernelStat", "OutputComparison", "RunResult", "TimelineEvent"],
                    "fuselens.core.measure.result"),
    **dict.fromkeys(["Progress", "RunHandle", "RunRequest", "run", "start_run"], "fuselens.core.runtime.runner"),
}

__all__ = [
    "GraphRun",
    "KernelStat",
    "OutputComparison",
    "Progress",
    "RunHandle",
    "RunRequest",
    "RunResult",
    "TimelineEvent",
    "run",
    "start_run",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
