"""AutoFuse grouping: which fusible ops share one kernel, and why the others do not.

The rules follow graph-autofusion's AutoFuseConfig, stated over op classes (op_classes.py):

1. Vertical: in topological order every fusible op joins the groups of its fusible producers.
2. Horizontal: groups whose ops read the same (non-constant) tensor and produce outputs of the
   same shape merge, since one kernel then reads that tensor once over one loop nest. Only
   that cheaper case is tried, and a refused horizontal merge is not a near miss.
3. Every merge is checked: at most `max_fusion_size` ops and 8 inputs per kernel; a reduce ends
   its kernel (nothing joins after it, it never merges horizontally), takes at most 3
   elementwise producers and is the kernel's only output; no cycle after contraction.
4. A group of one op is not fused (lifted back).

Decisions where the toolchain leaves room:
* Constants are not ops of a group. A Const (or Identity(Const)) with at most
  `MAX_BODY_CONST_ELEMENTS` elements whose every consumer is in the group moves into the
  kernel body (scalars, reduce and concat axes: the compiler sees them as constants); any
  other constant is a kernel input and counts towards the 8.
* An op whose inputs are all constant is left to constant folding (the graph engine folds it
  before AutoFuse runs), e.g. the `Rsqrt(var + eps) * gamma` part of a frozen Keras BatchNorm.
* An intermediate read outside its pointwise group stays an output of the fused node
  (a multi-output kernel, as graph-autofusion allows); a reduce kernel has the reduce as its
  only output, so there such an intermediate breaks the group, and where the outside reader
  leads back into the group (a cycle) it breaks any group. Both are near misses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fuselens.core.graph import Graph, TensorRef
from fuselens.passes.autofuse.flags import AutofuseFlags
from fuselens.passes.autofuse.op_classes import (
    CONCAT,
    FLAG_CATEGORY,
    OPAQUE,
    REDUCE,
    ascend_op_type,
    classify,
    fusion_class,
    operand_slots,
)
from fuselens.passes.base import Reason

MAX_INPUTS = 8
MAX_REDUCE_PRODUCERS = 3
MAX_BODY_CONST_ELEMENTS = 64
NAME_LIMIT = 140


@dataclass(frozen=True)
class FusionGroup:
    """One fused kernel: its toolchain name and exactly what the fused node replaces and wires."""

    name: str
    category: str  # pointwise | reduce | concat (the kernel name's category)
    ops: tuple[str, ...]  # in topological order
    op_types: tuple[str, ...]  # Ascend spelling of ops, as in the name
    constants: tuple[str, ...]  # Const / Identity(Const) nodes moved into the kernel body
    inputs: tuple[TensorRef, ...]
    outputs: tuple[TensorRef, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.ops + self.constants


@dataclass(frozen=True)
class Refusal:
    """Why something did not fuse: becomes a NearMiss of the pass."""

    anchor: str
    nodes: tuple[str, ...]
    reason: Reason  # in words, with the node or edge at fault


@dataclass
class Grouping:
    groups: list[FusionGroup] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)


def kernel_name(category: str, counter: int, op_types: list[str] | tuple[str, ...]) -> str:
    """`autofuse_<category>_<counter>_<OpType>_...`, cut to 140 characters like the toolchain."""
    return "_".join(["autofuse", category, str(counter), *op_types])[:NAME_LIMIT]


def group_graph(graph: Graph, flags: AutofuseFlags) -> Grouping:
    """The fused kernels for `graph` under `flags`, and the near misses with reasons."""
    if not flags.fuses_anything:
        return Grouping()
    return _Grouper(graph, flags).run()


@dataclass(eq=False)
class _Group:
    members: set[str]


class _Grouper:
    def __init__(self, graph: Graph, flags: AutofuseFlags):
        self.graph = graph
        self.flags = flags
        # Graph order among ready nodes, so kernel names and counters follow the order the model
        # was written in (Abs before Neg when written so).
        self.order = graph.topological_order()
        self.pos = graph.topological_index()
        self.kind = {name: OPAQUE if graph.is_const(name) else classify(graph, name) for name in self.order}
        self.constant = self._constant_nodes()
        self.group_of: dict[str, _Group] = {}
        self.refusals: list[Refusal] = []

    # ---- classification ------------------------------------------------------------------
    def _constant_nodes(self) -> set[str]:
        """Constants and table ops computed from constants only (left to constant folding)."""
        constant: set[str] = set()
        for name in self.order:
            inputs = self.graph.input_nodes(name)
            if self.graph.is_const(name) or (
                    fusion_class(self.graph.op(name)) and inputs and all(node in constant for node in inputs)):
                constant.add(name)
        return constant

    def category(self, name: str) -> str | None:
        return FLAG_CATEGORY.get(self.kind[name])

    def fusible(self, name: str) -> bool:
        category = self.category(name)
        return category is not None and name not in self.constant and self.flags.is_enabled(category)

    def holds(self, group: _Group, kind: str) -> bool:
        return any(self.kind[m] == kind for m in group.members)

    def describe(self, name: str) -> str:
        return f"{name} ({self.graph.op(name)})"

    def data_producers(self, name: str) -> list[str]:
        inputs = self.graph.input_nodes(name)
        slots = operand_slots(self.graph, name) if fusion_class(self.graph.op(name)) else range(len(inputs))
        return list(dict.fromkeys(inputs[i] for i in slots if inputs[i] not in self.constant))

    def data_consumers(self, name: str) -> list[str]:
        return list(dict.fromkeys(c.node for c in self.graph.consumers(name)))

    # ---- the algorithm ---------------------------------------------------------------------
    def run(self) -> Grouping:
        self._refuse_switched_off_categories()
        for name in self.order:
            if self.fusible(name):
                self._fuse_vertically(name)
        for name in self.order:
            if name not in self.constant:
                self._fuse_horizontally(name)
        return self._finish()

    def _refuse_switched_off_categories(self) -> None:
        for name in self.order:
            category = self.category(name)
            if category is None or name in self.constant or self.flags.is_enabled(category):
                continue
            producers = [n for n in self.data_producers(name) if self.fusible(n)]
            neighbours = producers + [n for n in self.data_consumers(name) if self.fusible(n)]
            if neighbours:
                edge = (neighbours[0], name) if producers else (name, neighbours[0])
                self._refuse(name, [name, *neighbours], Reason(
                    f"{self.describe(name)} is a {category} op and the {category} category is off, so it is not fused "
                    f"with {self.describe(neighbours[0])}; {self.flags.how_to_enable(category)}", name, edge=edge))

    def _fuse_vertically(self, name: str) -> None:
        self.group_of[name] = _Group({name})
        for producer in self.data_producers(name):
            source = self.group_of.get(producer)
            if source is None or source is self.group_of[name] or self.holds(source, REDUCE):
                continue  # not fusible, already merged, or a reduce that ends its kernel
            self._try_merge(source, self.group_of[name], name, report=True)

    def _fuse_horizontally(self, tensor_node: str) -> None:
        readers = [c for c in self.data_consumers(tensor_node)
                   if c in self.group_of and not self.holds(self.group_of[c], REDUCE)]
        if len(readers) < 2:
            return
        shape = self.graph.output_shape(readers[0])
        if shape is None or None in shape:
            return
        for reader in readers[1:]:
            first, other = self.group_of[readers[0]], self.group_of[reader]
            if other is not first and self.graph.output_shape(reader) == shape:
                self._try_merge(first, other, reader, report=False)

    def _try_merge(self, a: _Group, b: _Group, anchor: str, *, report: bool) -> bool:
        members = a.members | b.members
        reason = self._merge_refusal(members, anchor)
        if reason is not None:
            if report:
                self._refuse(anchor, list(members), reason)
            return False
        merged = _Group(members)
        for member in members:
            self.group_of[member] = merged
        return True

    def _merge_refusal(self, members: set[str], anchor: str) -> Reason | None:
        joining = self.describe(anchor)
        reduces = [m for m in members if self.kind[m] == REDUCE]
        if reduces:
            reduce = self.describe(reduces[0])
            producers = self.ordered(m for m in members if self.kind[m] != REDUCE)
            if len(producers) > MAX_REDUCE_PRODUCERS:
                return Reason(f"reduce {reduce} would take {len(producers)} elementwise producers "
                              f"({', '.join(producers)}); a reduce takes at most {MAX_REDUCE_PRODUCERS}", reduces[0])
            for member in producers:
                readers = self.graph.consumer_nodes(member)
                outside = [c for c in readers if c not in members] or ([] if readers else ["a graph output"])
                if outside:
                    edge = (member, outside[0]) if readers else None
                    return Reason(f"intermediate {member} has a consumer outside the group ({outside[0]}); a reduce "
                                  f"ends its kernel as its only output, so {reduce} is not fused with {member}",
                                  member, edge=edge)
        if len(members) > self.flags.max_fusion_size:
            return Reason(f"fusing {joining} would make a kernel of {len(members)} ops, over "
                          f"--max_fusion_size={self.flags.max_fusion_size}", anchor)
        inputs, _ = self.boundary(members)
        if len(inputs) > MAX_INPUTS:
            return Reason(f"fusing {joining} would make a kernel with {len(inputs)} inputs, over the limit of "
                          f"{MAX_INPUTS}", anchor)
        cycle = self._cycle(members)
        if cycle is not None:
            member, reader = cycle
            return Reason(f"intermediate {member} has a consumer outside the group ({reader}) that leads back into "
                          f"it; fusing {joining} would create a cycle", reader, edge=(member, reader))
        return None

    def _cycle(self, members: set[str]) -> tuple[str, str] | None:
        """(member, outside reader) when a path leaves the group and comes back into it."""
        path = self.graph.contraction_cycle(members)
        return None if path is None else (path[0], path[1])

    # ---- the kernel's boundary ----------------------------------------------------------------
    def boundary(self, members: set[str]) -> tuple[list[TensorRef], list[str]]:
        """(kernel inputs, constants moved into the body) of a set of ops."""
        inputs: list[TensorRef] = []
        body_constants: list[str] = []
        for member in self.ordered(members):
            for ref in self.graph.inputs(member):
                if ref.node in members or ref in inputs or ref.node in body_constants:
                    continue
                chain = self._body_constant(ref.node, members)
                if chain:
                    body_constants += [c for c in chain if c not in body_constants]
                else:
                    inputs.append(ref)
        return inputs, body_constants

    def _body_constant(self, name: str, members: set[str]) -> list[str]:
        """The Identity...Const chain behind `name` when it is small and read only by `members`."""
        chain = self.graph.const_chain(name)
        if chain is None:
            return []
        dims = self.graph.node(chain[-1]).attr["value"].tensor.tensor_shape.dim  # its size, without decoding it
        if math.prod(d.size for d in dims) > MAX_BODY_CONST_ELEMENTS:
            return []
        allowed = members | set(chain)
        if any(reader not in allowed for node in chain for reader in self.graph.consumer_nodes(node)):
            return []
        return chain

    def outputs(self, members: set[str]) -> list[TensorRef]:
        """Members read outside the group, or read by nobody (graph outputs)."""
        return [TensorRef(m) for m in self.ordered(members)
                if not self.graph.consumer_nodes(m) or any(c not in members for c in self.graph.consumer_nodes(m))]

    def ordered(self, names) -> list[str]:
        return sorted(names, key=lambda n: self.pos[n])

    # ---- results ----------------------------------------------------------------------------
    def _finish(self) -> Grouping:
        unique = {id(g): g for g in self.group_of.values()}.values()
        kernels = sorted((g for g in unique if len(g.members) > 1), key=lambda g: min(self.pos[m] for m in g.members))
        counters: dict[str, int] = {}
        groups = []
        for group in kernels:
            ops = self.ordered(group.members)
            category = "reduce" if self.holds(group, REDUCE) else "concat" if self.holds(group, CONCAT) \
                else "pointwise"
            counter = counters.get(category, 0)
            counters[category] = counter + 1
            op_types = tuple(ascend_op_type(self.graph.op(op)) for op in ops)
            inputs, constants = self.boundary(group.members)
            groups.append(FusionGroup(kernel_name(category, counter, op_types), category, tuple(ops), op_types,
                                      tuple(constants), tuple(inputs), tuple(self.outputs(group.members))))
        explained = {node for refusal in self.refusals for node in refusal.nodes}
        for name, group in self.group_of.items():
            if len(group.members) == 1 and name not in explained:
                self._refuse(name, [name], self._alone_reason(name))
        self._refuse_splits(groups)
        return Grouping(groups, self.refusals)

    def _refuse_splits(self, groups: list[FusionGroup]) -> None:
        """An opaque op between two kernels splits what would be one chain: say so (the near miss
        names the op and both kernels' ops), since the user sees two kernels and no reason."""
        kernel_of = {op: group for group in groups for op in group.ops}
        for name in self.order:
            if self.kind.get(name) != OPAQUE or self.graph.is_const(name):
                continue
            before = {id(kernel_of[p]): kernel_of[p] for p in self.data_producers(name) if p in kernel_of}
            after = {id(kernel_of[c]): kernel_of[c] for c in self.data_consumers(name) if c in kernel_of}
            for first in before.values():
                for second in after.values():
                    if first is not second:
                        chains = " and ".join("->".join(self.graph.op(op) for op in g.ops) for g in (first, second))
                        self._refuse(name, [name, *first.ops, *second.ops], Reason(
                            f"{self.describe(name)} is not a vector op, so AutoFuse cannot fuse across it: the chains "
                            f"{chains} become two kernels ({first.name}, {second.name})", name))

    def _alone_reason(self, name: str) -> Reason:
        """Why a fusible op found no partner: which neighbour stopped the chain (the culprit; else the op itself)."""
        parts, stoppers = [], []
        for direction, neighbours in (("producer", self.data_producers(name)), ("consumer", self.data_consumers(name))):
            for neighbour in neighbours:
                ends_reduce = neighbour in self.group_of and self.holds(self.group_of[neighbour], REDUCE)
                if direction == "producer" and ends_reduce:
                    parts.append(f"its producer {self.describe(neighbour)} is a reduce, which ends its kernel")
                    stoppers.append(neighbour)
                elif self.kind.get(neighbour, OPAQUE) == OPAQUE:
                    beyond = self.data_producers(neighbour) if direction == "producer" \
                        else self.data_consumers(neighbour)
                    fusible = [b for b in beyond if b != name and self.fusible(b)]
                    if fusible:
                        parts.append(f"its chain to {self.describe(fusible[0])} is broken by the opaque op "
                                     f"{self.describe(neighbour)}")
                        stoppers.append(neighbour)
        if not parts:
            around = self.data_producers(name) + self.data_consumers(name)
            shown = ", ".join(self.describe(n) for n in around[:4]) or "none"
            parts.append(f"no fusible producer or consumer (neighbours: {shown})")
        return Reason(f"{self.describe(name)} alone is not fused (a single-op group is lifted back): "
                      f"{'; '.join(parts)}", *(stoppers or [name]))

    def _refuse(self, anchor: str, nodes: list[str], reason: Reason) -> None:
        self.refusals.append(Refusal(anchor, tuple(self.ordered(set(nodes))), reason))

