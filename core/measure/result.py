"""What a run produced, as plain data: kernel tables, one-step timelines, comparisons; JSON both ways.

The same `KernelStat` rows come from TensorFlow step stats (a run here) and from msprof's
op_summary (a run on an Ascend host), so the GUI shows both the same way.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_json_atomic

RUN_FILE_FORMAT = "fuselens-run"
RUN_FILE_VERSION = 1
# A run file opens with RunResult's first fields (its "format" key comes last) or names its format early.
_RUN_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"model"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"backend"\s*:')
_RUN_FORMAT = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{.*"format"\s*:\s*"' + RUN_FILE_FORMAT.encode() + rb'"', re.S)


def recognises(head: bytes) -> bool:
    """Whether a file whose first 64 KiB are `head` is a FuseLens run file (`RunResult.save`'s JSON)."""
    return bool(_RUN_OPENING.match(head) or _RUN_FORMAT.match(head))


@dataclass
class KernelStat:
    """One kernel over all timed steps; `node` is the graph node it belongs to (None if unknown)."""

    kernel: str
    op_type: str
    node: str | None
    pass_id: str | None
    device: str
    count: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float


@dataclass
class TimelineEvent:
    """One kernel execution in the recorded step; `start_us` is relative to the step's first kernel."""

    kernel: str
    op_type: str
    node: str | None
    pass_id: str | None
    device: str
    start_us: float
    dur_us: float


@dataclass
class OpTypeStat:
    """One op type's total over a run, as msprof's op_statistic gives it (no per-kernel rows behind it)."""

    op_type: str
    core_type: str
    count: int
    total_us: float
    avg_us: float
    min_us: float | None
    max_us: float | None
    ratio_pct: float | None


@dataclass
class GraphRun:
    """One graph's run: wall time per timed step, its kernel table and one step's timeline."""

    label: str
    steps: int
    step_times_us: list[float] = field(default_factory=list)
    kernels: list[KernelStat] = field(default_factory=list)
    timeline: list[TimelineEvent] = field(default_factory=list)
    source: str = "tensorflow"  # or "msprof", "msprof op_statistic"
    op_types: list[OpTypeStat] = field(default_factory=list)  # per-type totals (an op_statistic import)
    # fused node -> how it executed ("XLA kernel", "as its original ops: conv epilogue on CPU", ...)
    execution: dict[str, str] = field(default_factory=dict)
    # what else the executed copy changed so TensorFlow computes the graph's own math (one line each)
    execution_notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        times = self.step_times_us
        kernel_us = sum(k.total_us for k in self.kernels)
        return {
            "steps": self.steps,
            "step_mean_us": round(statistics.fmean(times), 3) if times else None,
            "step_median_us": round(statistics.median(times), 3) if times else None,
            "kernel_count": len(self.kernels),
            "kernel_launches_per_step": round(sum(k.count for k in self.kernels) / self.steps, 3)
            if self.steps else None,
            "kernel_us_per_step": round(kernel_us / self.steps, 3) if self.steps else None,
        }


@dataclass
class OutputComparison:
    """Original vs fused for one output; errors are over entries finite in both graphs."""

    original: str
    fused: str
    dtype: str
    shape: list[int]
    max_abs: float | None
    max_rel: float | None
    mean_abs: float | None
    rtol: float
    atol: float
    allclose: bool
    nonfinite_original: int = 0
    nonfinite_fused: int = 0
    note: str = ""

    @property
    def nonfinite(self) -> bool:
        return bool(self.nonfinite_original or self.nonfinite_fused)


@dataclass
class RunResult:
    """Everything a run (or an imported profile) produced (a failed run raises instead)."""

    model: str
    backend: str
    steps: int
    warmup: int
    traced: bool
    pass_ids: list[str] = field(default_factory=list)
    graphs: dict[str, GraphRun] = field(default_factory=dict)
    comparison: list[OutputComparison] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def allclose(self) -> bool | None:
        return all(c.allclose for c in self.comparison) if self.comparison else None

    def speedup(self) -> float | None:
        """Original median step time over fused median step time (>1: the fused graph is faster)."""
        if "original" not in self.graphs or "fused" not in self.graphs:
            return None
        before = self.graphs["original"].summary()["step_median_us"]
        after = self.graphs["fused"].summary()["step_median_us"]
        return round(before / after, 3) if before and after else None

    def kernel_speedup(self) -> float | None:
        """The same ratio over summed kernel time per step (ignores session overhead)."""
        if "original" not in self.graphs or "fused" not in self.graphs:
            return None
        before = self.graphs["original"].summary()["kernel_us_per_step"]
        after = self.graphs["fused"].summary()["kernel_us_per_step"]
        return round(before / after, 3) if before and after else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["format"] = RUN_FILE_FORMAT
        data["version"] = RUN_FILE_VERSION
        data["summary"] = {name: g.summary() for name, g in self.graphs.items()}
        data["speedup"] = self.speedup()
        data["kernel_speedup"] = self.kernel_speedup()
        data["allclose"] = self.allclose
        return data

    @classmethod
    def from_json(cls, data: Any, *, source: str = "<run>") -> RunResult:
        if not isinstance(data, dict) or data.get("format") != RUN_FILE_FORMAT:
            raise FuseLensError(f"{source}: not a FuseLens run file (no \"format\": \"{RUN_FILE_FORMAT}\")")
        if data.get("version") != RUN_FILE_VERSION:
            raise FuseLensError(f"{source}: run file version {data.get('version')!r} is not supported "
                                f"(this FuseLens reads version {RUN_FILE_VERSION})")
        try:
            graphs = {name: _graph_run(g) for name, g in data["graphs"].items()}
            comparison = [_build(OutputComparison, c) for c in data["comparison"]]
            base = {f.name: data[f.name] for f in fields(cls) if f.name not in ("graphs", "comparison")}
        except (KeyError, TypeError, AttributeError) as e:
            raise FuseLensError(f"{source}: run file is missing or has a malformed field ({e})") from None
        return cls(**base, graphs=graphs, comparison=comparison)

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_json_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunResult:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
        except UnicodeDecodeError:
            raise FuseLensError(f"{path}: not a FuseLens run file (not UTF-8 text)") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise FuseLensError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
        return cls.from_json(data, source=str(path))


def _build(cls: type, data: dict[str, Any]) -> Any:
    return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def _graph_run(data: dict[str, Any]) -> GraphRun:
    run = _build(GraphRun, data)
    run.kernels = [_build(KernelStat, k) for k in data.get("kernels", [])]
    run.timeline = [_build(TimelineEvent, e) for e in data.get("timeline", [])]
    run.op_types = [_build(OpTypeStat, t) for t in data.get("op_types", [])]
    return run
