"""Bisect: which matches make the fused model disagree with the original, or run slower.

Delta debugging over the matches of a pass configuration, in pipeline order. A trial fuses
exactly a subset of them (every other match skipped by id, and any match that only appears
because of those skips skipped too) and runs it against the original in one long-lived child
process (`RunnerProcess`: TensorFlow is imported once). It fails when the outputs are not
allclose (`numeric`), or when its median step time is more than `slowdown` percent above the
original's, both timed step by step in turn in one process and compared as the median over
blocks of steps, measured twice when the blocks disagree (`time`; the noise is measured first by
timing the original against itself).

The search (`minimal_failing`) bisects the matches in pipeline order for the shortest failing
prefix, whose last match is a culprit, and repeats with the culprits found so far always fused
until they fail on their own: a 1-minimal failing set in about log2(n) runs per culprit (a fault
that needs two matches names both). While what is left still fails, the search repeats on it, so
every independent culprit is found and skipping them all fixes the model, which one more run
verifies. From the culprits come the reproduction for the toolchain: the skip list, an AutoFuse
`--skip_node_names_cfg` .ini, and the smallest set of whole-pass switches that also avoids the
failure, with the matches it costs.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.errors import Cancelled, FuseLensError
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.graph import Graph
from fuselens.core.measure.compare import TOLERANCES
from fuselens.core.measure.result import RunResult
from fuselens.core.runtime.runner import RunnerProcess, RunRequest, start_run
from fuselens.passes.base import Match
from fuselens.passes.config import AUTOFUSE_PASS_ID, PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.session.layerwise import Fuse
from fuselens.session.run_workflow import wait_cancellable

MODES = ("numeric", "time")
REFUSE_ROUNDS = 3  # skipping matches can reveal new ones; they are skipped too, this many times at most
MAX_RUNS = 400


@dataclass(frozen=True)
class BisectOptions:
    """How to judge a trial. `slowdown` is a percentage; `blocks` x `steps` timed steps per trial."""

    by: str = "numeric"
    rtol: float | None = None
    atol: float | None = None
    slowdown: float = 10.0
    steps: int = 20
    blocks: int = 3
    warmup: int = 3
    backend: str = "cpu"
    grappler: bool = True  # off: both graphs run as written (a numeric bisect runs about 3x faster)
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    inputs: str | None = None
    seed: int = 0
    timeout: float | None = 600.0
    max_runs: int = MAX_RUNS

    def __post_init__(self) -> None:
        if self.by not in MODES:
            raise FuseLensError(f"--by must be one of {', '.join(MODES)}, not {self.by!r}")
        if self.slowdown <= 0 or self.steps < 1 or self.blocks < 1:
            raise FuseLensError("--slowdown, the steps and the blocks must be positive")

    def tolerances(self) -> tuple[float, float] | None:
        """(rtol, atol) for every comparison, or None for each dtype's own; one given alone keeps
        float32's value for the other."""
        if self.rtol is None and self.atol is None:
            return None
        rtol, atol = TOLERANCES["float32"]
        return (rtol if self.rtol is None else self.rtol, atol if self.atol is None else self.atol)


@dataclass
class Trial:
    """One run: which matches were fused, and what it measured."""

    fused: frozenset[str]
    failed: bool
    max_abs: float | None = None  # numeric: the largest output error
    max_rel: float | None = None
    slowdown: float | None = None  # time: percent over the original (median over blocks)
    spread: float | None = None  # time: max - min of the blocks' slowdowns, percent


@dataclass
class Culprit:
    id: str
    pass_id: str
    anchor: str
    nodes: tuple[str, ...]
    summary: str
    group: int  # culprits of one group fail only together

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__, nodes=list(self.nodes))


@dataclass
class PassSwitches:
    """The smallest set of whole passes to switch off instead, its toolchain forms and what it costs."""

    off: list[str]
    matches_lost: int
    lost_by_pass: dict[str, int]
    scope_list: str
    autofuse_flags: str
    switch_file: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BisectResult:
    by: str
    model: str
    matches: int  # matches searched
    whole: Trial | None  # the full configuration
    culprits: list[Culprit] = field(default_factory=list)
    groups: list[Trial] = field(default_factory=list)  # per group, the trial with only it fused
    runs: int = 0
    noise: float | None = None  # time: the largest block slowdown of the original timed against itself, percent
    fixed: Trial | None = None  # the configuration with the skip list applied
    switches: PassSwitches | None = None
    autofuse_nodes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    threshold: float | None = None  # time: the slowdown that counts, percent
    stopped: str = ""  # why the search ended early (max runs), if it did

    @property
    def found(self) -> bool:
        return bool(self.culprits)

    def skip_ids(self) -> list[str]:
        return [c.id for c in self.culprits]

    def skip_file_text(self) -> str:
        """For `--skip-file` (FuseLens) and the window: one match id per line."""
        head = f"# fuselens bisect --by {self.by} {self.model}: skipping these makes it pass\n"
        return head + "".join(f"{i}\n" for i in self.skip_ids())

    def autofuse_ini_text(self) -> str:
        """AutoFuse's own per-node switch (`AUTOFUSE_DFX_FLAGS="--skip_node_names_cfg=FILE.ini"`): the
        nodes of the AutoFuse culprits under [ByNodeName], one name per line."""
        lines = [f"; fuselens bisect {self.model}: nodes of the AutoFuse culprit kernels",
                 "; use: AUTOFUSE_DFX_FLAGS=\"--skip_node_names_cfg=THIS_FILE.ini\"", "[ByNodeName]"]
        if not self.autofuse_nodes:
            lines.insert(1, "; no AutoFuse match is among the culprits: use the skip list or the pass switches")
        return "\n".join([*lines, *self.autofuse_nodes]) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "model": self.model, "found": self.found, "matches": self.matches, "runs": self.runs,
                "whole": _trial_json(self.whole), "culprits": [c.to_json() for c in self.culprits],
                "groups": [_trial_json(t) for t in self.groups], "noise_percent": self.noise,
                "threshold_percent": self.threshold, "fixed": _trial_json(self.fixed),
                "skip_list": self.skip_ids(), "autofuse_skip_nodes": self.autofuse_nodes,
                "pass_switches": self.switches.to_json() if self.switches else None,
                "seconds": round(self.seconds, 3), "stopped": self.stopped}

    def write_reproduction(self, directory: str | Path) -> list[Path]:
        """skip.txt, autofuse_skip.ini and, when a pass switch avoids it, fusion_switch.json."""
        out = Path(directory)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FuseLensError(f"{out}: cannot create the folder ({e.strerror})") from None
        files = {"skip.txt": self.skip_file_text(), "autofuse_skip.ini": self.autofuse_ini_text()}
        if self.switches is not None and self.switches.off:
            files["fusion_switch.json"] = self.switches.switch_file
        return [write_bytes_atomic(out / name, text.encode()) for name, text in files.items()]


def _trial_json(trial: Trial | None) -> dict[str, Any] | None:
    if trial is None:
        return None
    return {"fused": len(trial.fused), "failed": trial.failed, "max_abs": trial.max_abs, "max_rel": trial.max_rel,
            "slowdown_percent": trial.slowdown, "spread_percent": trial.spread}


def minimal_failing(items: Sequence[str], fails: Callable[[Sequence[str]], bool]) -> list[str]:
    """A 1-minimal subset of `items` that still fails, `fails(items)` being true, in about log2(n) runs
    per member: the shortest failing prefix (binary search, in pipeline order) ends in a culprit; the
    search repeats on the matches before it, with the culprits found so far always in, until those
    fail on their own. Assumes that fusing more never makes a failure go away (monotone)."""
    found: list[str] = []
    candidates = list(items)
    while not fails(found):
        low, high = 1, len(candidates)  # found + candidates[:high] fails; + candidates[:low - 1] need not
        while low < high:
            middle = (low + high) // 2
            if fails([*found, *candidates[:middle]]):
                high = middle
            else:
                low = middle + 1
        found.append(candidates[high - 1])
        candidates = candidates[:high - 1]
    order = {item: i for i, item in enumerate(items)}
    return sorted(found, key=order.__getitem__)


class Bisector:
    """One bisect of `graph` under `config`: `fuse` runs the pipeline (in-process, or in the window's
    TensorFlow helper), runs go to one child process (`process`, kept running, or one of its own)."""

    def __init__(self, graph: Graph, config: PassConfig, options: BisectOptions, fuse: Fuse, *, model: str = "",
                 progress: Callable[[str], None] = lambda _text: None,
                 cancelled: Callable[[], bool] = lambda: False, process: RunnerProcess | None = None):
        self.graph, self.config, self.options, self.fuse = graph, config, options, fuse
        self.model = model
        self.progress, self.cancelled = progress, cancelled
        self.process = process or RunnerProcess()
        self._own_process = process is None
        self.trials: dict[frozenset[str], Trial] = {}
        self.runs = 0
        self.matches: dict[str, Match] = {}
        self.order: list[str] = []

    # ---- the search -------------------------------------------------------------------------------
    def run(self) -> BisectResult:
        start = time.monotonic()
        try:
            result = self._search()
        finally:
            if self._own_process:
                self.process.close()
        result.runs, result.seconds = self.runs, time.monotonic() - start
        return result

    def _search(self) -> BisectResult:
        options = self.options
        self._say("fusing with every match")
        pipeline = self.fuse(self.graph, self.config)
        self.matches = {m.id: m for r in pipeline.results for m in r.matches}
        self.order = list(self.matches)
        result = BisectResult(options.by, self.model, len(self.order), None,
                              threshold=options.slowdown if options.by == "time" else None)
        if options.by == "time":
            result.noise = self._noise()
        result.whole = whole = self.trial(self.order)
        if not whole.failed:
            return result
        remaining = list(self.order)
        while remaining and self.trial(remaining).failed:
            if self.runs >= options.max_runs:
                result.stopped = f"stopped after {self.runs} runs (--max-runs)"
                break
            group = minimal_failing(remaining, lambda subset: self.trial(subset).failed)
            result.groups.append(self.trial(group))
            result.culprits += [self._culprit(i, len(result.groups) - 1) for i in group]
            remaining = [i for i in remaining if i not in group]
        if not result.culprits:
            return result
        result.autofuse_nodes = sorted({n for c in result.culprits if c.pass_id == AUTOFUSE_PASS_ID for n in c.nodes})
        self._say("checking the skip list")
        result.fixed = self._judge(self.config.with_skipped(result.skip_ids()), "with the skip list")
        result.switches = self._pass_switches(result, pipeline)
        return result

    def _culprit(self, match_id: str, group: int) -> Culprit:
        m = self.matches[match_id]
        return Culprit(m.id, m.pass_id, m.anchor, m.nodes, m.summary, group)

    def trial(self, fused: Iterable[str]) -> Trial:
        """Fuse exactly these matches (in pipeline order) and judge the run; cached by set."""
        key = frozenset(fused)
        if key not in self.trials:
            skipped = frozenset(self.order) - key
            config = self.config.with_skipped(skipped)
            for _ in range(REFUSE_ROUNDS):  # a skip can let another pass match something new: skip that too
                pipeline = self.fuse(self.graph, config)
                extra = {m.id for r in pipeline.results for m in r.matches} - key
                if not extra:
                    break
                config = config.with_skipped(extra)
            self.trials[key] = self._judge_pipeline(pipeline, f"{len(key)} of {len(self.order)} matches fused")
        return self.trials[key]

    def _judge(self, config: PassConfig, what: str) -> Trial:
        return self._judge_pipeline(self.fuse(self.graph, config), what)

    def _judge_pipeline(self, pipeline: PipelineResult, what: str) -> Trial:
        fused = frozenset(m.id for r in pipeline.results for m in r.matches)
        if self.options.by == "numeric":
            result = self._run(pipeline.fused, what, pipeline)
            return Trial(fused, not result.allclose, _largest(c.max_abs for c in result.comparison),
                         _largest(c.max_rel for c in result.comparison))
        slowdown, spread = self._time(pipeline.fused, what, pipeline)
        return Trial(fused, slowdown > self.options.slowdown, slowdown=slowdown, spread=spread)

    def _noise(self) -> float:
        """The original timed against itself: the slowdown that is only noise, in percent."""
        slowdowns = self._block_slowdowns(self._run(self.graph, "the original against itself (noise)"))
        return round(max(abs(s) for s in slowdowns), 2)

    def _time(self, fused: Graph, what: str, pipeline: PipelineResult) -> tuple[float, float]:
        """The median over blocks of steps. When the blocks disagree (some over the threshold, some not),
        the trial is measured once more and the blocks of both runs pooled: a burst of load on a shared
        machine moves a block or two, a slow fusion moves them all."""
        slowdowns = self._block_slowdowns(self._run(fused, what, pipeline))
        limit = self.options.slowdown
        if min(slowdowns) <= limit < max(slowdowns):
            slowdowns += self._block_slowdowns(self._run(fused, f"{what} (confirming)", pipeline))
        return round(statistics.median(slowdowns), 2), round(max(slowdowns) - min(slowdowns), 2)

    def _block_slowdowns(self, result: RunResult) -> list[float]:
        steps = self.options.steps
        before, after = result.graphs["original"].step_times_us, result.graphs["fused"].step_times_us
        return [(statistics.median(after[i:i + steps]) / statistics.median(before[i:i + steps]) - 1) * 100
                for i in range(0, len(before), steps)]

    def _run(self, fused: Graph, what: str, pipeline: PipelineResult | None = None) -> RunResult:
        if self.cancelled():
            raise Cancelled()
        self.runs += 1
        self._say(f"run {self.runs}: {what}")
        options = self.options
        timed = options.by == "time"
        request = RunRequest(
            original=self.graph, fused=fused, model=self.model, backend=options.backend,
            steps=options.steps * options.blocks if timed else 1, warmup=options.warmup if timed else 0,
            input_shapes=options.input_shapes, inputs=options.inputs, seed=options.seed, timeout=options.timeout,
            trace=False, grappler=options.grappler, interleave=timed, tolerances=options.tolerances(),
            original_to_final=pipeline.provenance.original_to_final() if pipeline and pipeline.provenance else None)
        return wait_cancellable(start_run(request, process=self.process), self.cancelled)

    def _say(self, text: str) -> None:
        self.progress(f"bisect: {text}")

    # ---- whole-pass switches ----------------------------------------------------------------------
    def _pass_switches(self, result: BisectResult, pipeline: PipelineResult) -> PassSwitches:
        """The fewest whole passes to switch off (of the culprits' passes) that also avoid the failure,
        preferring the one that loses fewest matches."""
        passes = list(dict.fromkeys(c.pass_id for c in result.culprits))
        general = [p for p in passes if self.config.get_pass(p).general]
        switchable = [p for p in passes if p not in general]
        note = (f"{', '.join(general)} cannot be switched off (general: always on in the toolchain)"
                if general else "")
        for size in range(1, len(switchable) + 1):
            fixes = []
            for off in itertools.combinations(switchable, size):
                self._say(f"trying with {', '.join(off)} off")
                config = self.config.with_passes(off, on=False)
                lowered = self.fuse(self.graph, config)
                if not self._judge_pipeline(lowered, f"{', '.join(off)} switched off").failed:
                    fixes.append((off, config, lowered))
            if fixes:
                off, config, lowered = min(fixes, key=lambda f: _match_count(f[2]))
                lost = {r.pass_id: len(r.matches) - len(lowered.result(r.pass_id).matches
                                                          if lowered.result(r.pass_id) else [])
                        for r in pipeline.results}
                return PassSwitches(list(off), _match_count(pipeline) - _match_count(lowered),
                                    {p: n for p, n in lost.items() if n}, config.scope_list(),
                                    config.autofuse_flags(), config.switch_file().to_json_text(), note)
        return PassSwitches([], 0, {}, "", "", "", note or "no set of the culprits' passes switched off avoids it")


def _match_count(pipeline: PipelineResult) -> int:
    return sum(len(r.matches) for r in pipeline.results)


def _largest(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def format_result(result: BisectResult) -> str:
    """The CLI's text: the verdict, the culprits with their pass, nodes and figure, the runs, the reproduction."""
    what = "outputs agree with the original" if result.by == "numeric" else "the fused model is not slower"
    lines = []
    if result.noise is not None:
        lines.append(f"noise: the original timed against itself differed by up to {result.noise:.1f}% "
                     f"(threshold {result.threshold:g}%)")
        if result.noise >= result.threshold:
            lines.append("  note: that is at or above the threshold, so a verdict near it may be noise: raise "
                         "--slowdown or --steps, or run on a quieter machine")
    whole = result.whole
    if whole is not None:
        lines.append(f"with all {result.matches} matches fused: {_figure(result, whole)}")
    if not result.found:
        lines.append(f"nothing to bisect: {what} ({result.runs} run{'s' if result.runs != 1 else ''})")
        return "\n".join(lines)
    lines.append(f"culprits: {len(result.culprits)} of {result.matches} matches, found in {result.runs} runs"
                 + (f" ({result.stopped})" if result.stopped else ""))
    for index, trial in enumerate(result.groups):
        members = [c for c in result.culprits if c.group == index]
        together = " (fail only together)" if len(members) > 1 else ""
        lines.append(f"  group {index + 1}{together}: with only it fused, {_figure(result, trial)}")
        for c in members:
            shown = ", ".join(c.nodes[:4]) + (f" (+{len(c.nodes) - 4} more)" if len(c.nodes) > 4 else "")
            lines.append(f"    {c.id}\n      pass {c.pass_id}: {c.summary}\n      nodes: {shown}")
    if result.fixed is not None:
        lines.append(f"with the skip list applied: {_figure(result, result.fixed)}")
    switches = result.switches
    if switches is not None and switches.off:
        lost = ", ".join(f"{p} {n}" for p, n in switches.lost_by_pass.items())
        lines.append(f"or switch off {', '.join(switches.off)}: costs {switches.matches_lost} matches ({lost})")
    if switches is not None and switches.note:
        lines.append(f"  note: {switches.note}")
    return "\n".join(lines)


def _figure(result: BisectResult, trial: Trial) -> str:
    if result.by == "numeric":
        error = (f"max abs {trial.max_abs:.3g}, max rel {trial.max_rel:.3g}"
                 if trial.max_abs is not None else "no finite values")
        return f"{error}: {'NOT allclose' if trial.failed else 'allclose'}"
    return (f"{trial.slowdown:+.1f}% step time vs the original (blocks spread {trial.spread:.1f}%)"
            f"{': slower than the threshold' if trial.failed else ''}")
