"""Per-kernel timings from TensorFlow step stats, mapped back to graph nodes.

Kernel names are not always node names: a fused call node compiled by XLA runs as one kernel
named after the call (or after an inner node, which `_fused_nodes` maps back), Grappler renames
what it rewrites (`relu_0/unary_ops_composition`, `ArithmeticOptimizer/AddOpsRewrite_add`,
`conv/_0__cf__1`), so the mapping tries the name, then the fused members, then name prefixes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import NamedTuple

from fuselens.core.graph import Graph
from fuselens.core.measure.result import GraphRun, KernelStat, TimelineEvent

# Executor bookkeeping, not computation: left out of kernel tables and counts.
BOOKKEEPING_OPS = frozenset({"NoOp", "_Arg", "_Retval", "_Send", "_Recv", "_HostSend", "_HostRecv", "Const",
                             "_SOURCE", "_SINK"})
BOOKKEEPING_NAMES = frozenset({"_SOURCE", "_SINK"})
GRAPPLER_PREFIXES = ("ConstantFolding", "ArithmeticOptimizer", "LayoutOptimizer", "Remapper",
                     "DependencyOptimizer", "LoopOptimizer", "MemoryOptimizer", "AutoMixedPrecision")
_LABEL_OP = re.compile(r"=\s*([\w.\-]+)\(")


class KernelEvent(NamedTuple):
    """One kernel execution as the child reports it (times in microseconds, start absolute)."""

    step: int
    device: str
    kernel: str
    op: str
    start_us: float
    dur_us: float


def label_op(timeline_label: str, fallback: str = "") -> str:
    """The op type in a step-stats timeline label `name = Op(inputs)`."""
    found = _LABEL_OP.search(timeline_label)
    return found.group(1) if found else fallback


class NodeMapper:
    """Kernel name -> graph node, with the node's fusion pass and fused op type (no graph: no mapping)."""

    def __init__(self, graph: Graph | None):
        self.graph = graph
        self._names = {node.name for node in graph} if graph is not None else set()
        self._functions = set(graph.functions) if graph is not None else set()
        self._member_of: dict[str, str] = {}
        for node in graph or ():
            info = graph.fused_info(node.name)
            for inner in info.nodes if info else ():
                self._member_of[inner] = node.name
        self._cache: dict[str, str | None] = {}

    def node(self, kernel: str) -> str | None:
        if kernel not in self._cache:
            self._cache[kernel] = self._find(kernel)
        return self._cache[kernel]

    def _find(self, kernel: str) -> str | None:
        candidates = _candidates(kernel)
        for candidate in candidates:  # exact names first, then shorter and shorter name prefixes
            if found := self._lookup(candidate):
                return found
        for candidate in candidates:
            parts = candidate.split("/")
            for end in range(len(parts) - 1, 0, -1):
                if found := self._lookup("/".join(parts[:end])):
                    return found
        return None

    def _lookup(self, name: str) -> str | None:
        if name in self._names:
            return name
        return self._member_of.get(name)

    def pass_id(self, node: str | None) -> str | None:
        if node is None or node not in self._names:
            return None
        info = self.graph.fused_info(node)
        return info.pass_id if info else None

    def op_type(self, node: str | None, executed: str) -> str:
        """The executed op, except that a call into a fused node's function shows its fused op type."""
        if node is not None and node in self._names and executed in self._functions:
            info = self.graph.fused_info(node)
            return info.op_type if info and info.op_type else executed
        return executed


def _candidates(kernel: str) -> list[str]:
    """The kernel name, then the names Grappler's rewrite may stand for: for
    `scope/ArithmeticOptimizer/AddOpsRewrite_Leaf_1_Add` that is `scope/Leaf_1_Add`, `scope/1_Add`,
    `scope/Add` (the rewrite tag dropped word by word), then `scope` itself."""
    name = kernel.split(":")[0]
    parts = name.split("/")
    found = [name]
    for i, part in enumerate(parts):
        if part in GRAPPLER_PREFIXES:
            scope, rest = parts[:i], "/".join(parts[i + 1:])
            tails = [rest] + [rest[j + 1:] for j, char in enumerate(rest) if char == "_"]
            found += ["/".join([*scope, tail]) for tail in tails if tail]
            if scope:
                found.append("/".join(scope))
            break
    return found


def is_bookkeeping(kernel: str, op: str) -> bool:
    return kernel in BOOKKEEPING_NAMES or op in BOOKKEEPING_OPS


def build_graph_run(label: str, graph: Graph | None, events: Iterable[KernelEvent], step_times_us: list[float],
                    steps: int) -> GraphRun:
    """The kernel table over all steps and the timeline of the last step, from raw kernel events."""
    mapper = NodeMapper(graph)
    durations: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    by_step: dict[int, list[KernelEvent]] = defaultdict(list)
    for event in events:
        if is_bookkeeping(event.kernel, event.op):
            continue
        durations[(event.kernel, event.op, event.device)].append(event.dur_us)
        by_step[event.step].append(event)
    kernels = []
    for (kernel, op, device), times in durations.items():
        node = mapper.node(kernel)
        kernels.append(KernelStat(
            kernel=kernel, op_type=mapper.op_type(node, op), node=node, pass_id=mapper.pass_id(node),
            device=device, count=len(times), total_us=round(sum(times), 3),
            mean_us=round(sum(times) / len(times), 3), min_us=round(min(times), 3), max_us=round(max(times), 3)))
    kernels.sort(key=lambda k: (-k.total_us, k.kernel))
    return GraphRun(label=label, steps=steps, step_times_us=[round(t, 3) for t in step_times_us],
                    kernels=kernels, timeline=timeline(by_step[max(by_step)] if by_step else [], mapper))


def timeline(events: list[KernelEvent], mapper: NodeMapper) -> list[TimelineEvent]:
    """One step's kernels in start order, times relative to the first kernel."""
    if not events:
        return []
    origin = min(e.start_us for e in events)
    rows = []
    for e in sorted(events, key=lambda e: (e.start_us, e.kernel)):
        node = mapper.node(e.kernel)
        rows.append(TimelineEvent(kernel=e.kernel, op_type=mapper.op_type(node, e.op), node=node,
                                  pass_id=mapper.pass_id(node), device=e.device,
                                  start_us=round(e.start_us - origin, 3), dur_us=round(e.dur_us, 3)))
    return rows
