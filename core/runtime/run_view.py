"""What the window's run-and-profile views show and read, computed without Qt.

The GUI's bar chart, timeline, kernel table, summary cards and heat overlay all read these
figures, and its input-shape field (like the CLI's `--input-shape`) is parsed here, so all of it
is testable headless and the same numbers appear in every view.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.execute import resolve_input_shape
from fuselens.core.graph import Graph
from fuselens.core.graph.opclass import Category, op_category
from fuselens.core.measure.result import GraphRun, KernelStat, RunResult, TimelineEvent

# Which pane of the window a run's graph belongs to: the original graph is drawn "before".
SIDE_OF_LABEL = {"original": "before", "fused": "after"}


# oneDNN builds of TensorFlow run `_MklNativeFusedConv2D`, `_MklMatMul`, ... for the graph's ops.
ONEDNN_PREFIXES = ("_MklNative", "_Mkl")


def kernel_category(op_type: str, pass_id: str | None) -> Category:
    """The op class of a kernel: `fused` when a fusion pass made its node, else by op type
    (a oneDNN kernel counts as the op it implements: `_MklNativeConv2D` is a conv)."""
    if pass_id is not None:
        return "fused"
    for prefix in ONEDNN_PREFIXES:
        if op_type.startswith(prefix):
            rest = op_type[len(prefix):]
            return next((c for c in (op_category(f"_{rest}"), op_category(rest)) if c != "other"), "other")
    return op_category(op_type)


def per_step_us(kernel: KernelStat, run: GraphRun) -> float:
    """A kernel's time per step (its total when the run has no step count, as op_statistic imports)."""
    return kernel.total_us / run.steps if run.steps else kernel.total_us


def top_kernels(run: GraphRun, n: int) -> list[KernelStat]:
    """The `n` kernels with the most total time, slowest first."""
    return sorted(run.kernels, key=lambda k: (-k.total_us, k.kernel))[:n]


def node_times(run: GraphRun, nodes: Iterable[str] = ()) -> dict[str, float]:
    """Kernel time per step summed per graph node (kernels not mapped to a node are left out);
    `nodes` get 0 when no kernel ran for them, so a heat scale shows them as cold."""
    times: dict[str, float] = defaultdict(float, dict.fromkeys(nodes, 0.0))
    for kernel in run.kernels:
        if kernel.node is not None:
            times[kernel.node] += per_step_us(kernel, run)
    return dict(times)


def timeline_lanes(events: Sequence[TimelineEvent]) -> tuple[list[int], list[str]]:
    """A lane per event so that no two events in a lane overlap (kernels of one device run in
    parallel on CPU), and each lane's device. Lanes of one device are adjacent."""
    lanes = [0] * len(events)
    labels: list[str] = []
    for device in sorted({e.device for e in events}):
        ends: list[float] = []  # end time of the last event per lane of this device
        first = len(labels)
        for i in sorted((i for i, e in enumerate(events) if e.device == device), key=lambda i: events[i].start_us):
            event = events[i]
            free = next((lane for lane, end in enumerate(ends) if end <= event.start_us), None)
            if free is None:
                free = len(ends)
                ends.append(0.0)
            ends[free] = event.start_us + event.dur_us
            lanes[i] = first + free
        labels += [device] * len(ends)
    return lanes, labels


def format_us(value: float | None) -> str:
    """Microseconds as a short human figure: 0.8 µs, 459 µs, 12.3 ms, 1.25 s."""
    if value is None or math.isnan(value):
        return "—"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3g} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} µs"


@dataclass(frozen=True)
class Card:
    """One summary card: a title, the figure, a detail line and a tone (good, bad, neutral)."""

    title: str
    value: str
    detail: str = ""
    tone: str = "neutral"


def summary_cards(result: RunResult) -> list[Card]:
    """Step time before and after, speedup, kernel counts and the numeric verdict per output."""
    cards = []
    for label, title in (("original", "Before"), ("fused", "After")):
        run = result.graphs.get(label)
        if run is None:
            continue
        s = run.summary()
        detail = f"{s['kernel_count']} kernels"
        if s["kernel_us_per_step"]:
            detail += f", {format_us(s['kernel_us_per_step'])} in kernels"
        value = f"{format_us(s['step_median_us'])} / step" if s["step_median_us"] is not None else "no step times"
        cards.append(Card(f"{title} ({run.source})" if run.source != "tensorflow" else title, value, detail))
    speedup = result.speedup()
    if speedup is not None:
        kernel = result.kernel_speedup()
        cards.append(Card("Speedup", f"{speedup:.2f}×", f"kernel time {kernel:.2f}×" if kernel else "",
                          "good" if speedup >= 1.0 else "bad"))
    for c in result.comparison:
        if c.max_abs is None:
            errors = "no finite values to compare"
        else:
            errors = f"max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}"
        note = f"; {c.note}" if c.note else ""
        cards.append(Card(f"Output {c.original.removesuffix(':0')}", "allclose ✔" if c.allclose else "NOT allclose ✘",
                          f"{errors} ({c.dtype}, rtol {c.rtol:g}){note}", "good" if c.allclose else "bad"))
    return cards


def common_scope(names: Iterable[str]) -> str:
    """The name scope all scoped names share (`mobilenetv2_1.00_224_1/`), '' if none: charts leave it
    out. Top-level names (`autofuse_pointwise_0_Abs_Relu_Exp`) do not count, and one scoped name
    has no scope to share (`relu_0/unary_ops_composition` keeps its `relu_0/`)."""
    split = [name.split("/")[:-1] for name in names if "/" in name]
    if len(split) < 2:
        return ""
    shared = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        shared.append(parts[0])
    return "".join(f"{part}/" for part in shared)


def short_name(kernel: str, width: int = 40, scope: str = "") -> str:
    """A kernel name without `scope`, cut to `width` characters from the left, keeping its last
    (most telling) part."""
    name = kernel.removeprefix(scope) if scope and kernel.startswith(scope) else kernel
    return name if len(name) <= width else "…" + name[-(width - 1):]


def open_inputs(graph: Graph) -> dict[str, str]:
    """Inputs with dimensions the model leaves open -> the shape to offer (batch 1 filled in, `?` where unknown)."""
    offered = {}
    for name in graph.placeholders():
        _, static = graph.placeholder_spec(name)
        if static is not None and all(d is not None for d in static):
            continue
        try:
            offered[name] = ",".join(str(d) for d in resolve_input_shape(graph, name))
        except FuseLensError:
            offered[name] = ",".join("?" if d is None else str(d) for d in static or ())
    return offered


def parse_input_shapes(text: str, source: str = "input shapes") -> dict[str, tuple[int, ...]]:
    """`input_1=1,224,224,3; mask=1,128` as {input: shape}: the window's shape field, and the CLI's
    `--input-shape` values joined by `;`, so both accept and refuse the same text. A FuseLensError
    names `source` and the part that is wrong."""
    shapes = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, dims = part.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            shape = ()
        if not sep or not name.strip() or not shape or any(d < 0 for d in shape):
            raise FuseLensError(f"{source}: {part!r} is not NAME=D1,D2,... with whole numbers "
                                f"(e.g. input_1=1,224,224,3)")
        shapes[name.strip()] = shape
    return shapes
