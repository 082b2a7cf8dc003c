"""Compile and run: original vs fused graph in a child process, numeric comparison, per-kernel profile.

Qt-free: the GUI and the CLI both call `start_run(RunRequest(...), on_progress)` and read a
`RunResult`, which saves to and loads from JSON ("a previous FuseLens run file").
"""

from core.runtime.result import GraphRun, KernelStat, OutputComparison, RunResult, TimelineEvent
from core.runtime.runner import Progress, RunHandle, RunRequest, run, start_run

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
