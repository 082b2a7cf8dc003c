"""A `ge.passes` pattern skeleton from nodes selected in the original graph: the start of a new pass.

The selection's nodes become the pattern's op calls, in topological order, with their edges; every
tensor the selection reads from outside (and every selected node that reads nothing: a constant, a
placeholder) becomes one of the pattern's inputs, `inputs[i]` in order of first use; the tensors read
outside the selection (or read by nobody) are what the pattern returns. Op types are GE's (the TF
parser's names, `ge_op_type`), so the file is the one a user deploys with ASCEND_GE_PY_PASS_PATH.
The skeleton matches the structure it was made from: it is a pass of the `@pattern` style whose
`replacement` rebuilds that structure unchanged, to be replaced by the fused form.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, TensorRef
from fuselens.passes.ge_python.optable import OPS, ge_type

DEFAULT_PASS_NAME = "SelectionFusionPass"


@dataclass(frozen=True)
class Skeleton:
    """The generated pass file's text and what it is made of (node names of the original graph)."""

    text: str
    pass_name: str
    nodes: tuple[str, ...]  # the pattern's op nodes, in the order the pattern builds them
    inputs: tuple[str, ...]  # the tensors (`node` or `node:port`) that are the pattern's inputs, in index order
    outputs: tuple[str, ...]  # the nodes whose outputs the pattern returns


def snake_case(name: str) -> str:
    """`BiasAdd` -> `bias_add`, `FusedBatchNormV3` -> `fused_batch_norm_v3`, `conv1/Conv2D` -> `conv1_conv2d`
    (may be empty: no letter or digit in `name`)."""
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z0-9])(?=[A-Z][a-z])", "_", name).lower()
    return re.sub(r"\W+", "_", snake).strip("_")


def _identifier(name: str, taken: set[str]) -> str:
    """A Python name for a node: its last scope component in snake_case, unique and no keyword."""
    base = snake_case(name.rsplit("/", 1)[-1]) or "t"
    if base[0].isdigit() or keyword.iskeyword(base) or base in ("self", "inputs"):
        base = f"t_{base}"
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}_{n}"
    taken.add(found)
    return found


def pattern_skeleton(graph: Graph, names: Iterable[str], *, pass_name: str = DEFAULT_PASS_NAME,
                     source: str = "") -> Skeleton:
    """The skeleton pass for the selected `names` of `graph`; FuseLensError for a selection with no op in it or
    with an op FuseLens's `ge.es` has no function for (naming it)."""
    if not pass_name.isidentifier() or keyword.iskeyword(pass_name) or not pass_name.isascii():
        raise FuseLensError(f"{pass_name!r} is no pass name for the skeleton: letters, digits and _, the class "
                            "takes it too (e.g. MyMatMulAddPass)")
    chosen = {n for n in names if n in graph}
    order = graph.topological_index()
    ops = sorted((n for n in chosen if graph.inputs(n)), key=order.__getitem__)
    if not ops:
        raise FuseLensError("select the nodes of the pattern in the before pane first (at least one node that "
                            "reads a tensor: a constant or a placeholder alone is no pattern)")
    missing = sorted({f"{ge_type(graph.op(n))} ({n})" for n in ops if ge_type(graph.op(n)) not in OPS})
    if missing:
        raise FuseLensError(f"FuseLens's ge.es has no op function for {', '.join(missing)}; its op table has "
                            f"{', '.join(sorted(OPS))}")
    taken: set[str] = set()
    inputs: dict[TensorRef, str] = {}  # a tensor from outside -> its `inputs[i]`
    values: dict[str, str] = {}  # a selected op -> the variable of its output (every op in the table has one)
    lines: list[str] = []
    for name in ops:
        args = []
        for ref in graph.inputs(name):
            if ref.node in values:
                args.append(values[ref.node])
            else:
                args.append(inputs.setdefault(ref, f"inputs[{len(inputs)}]"))
        values[name] = _identifier(name, taken)
        lines.append(f"    {values[name]} = {ge_type(graph.op(name))}({', '.join(args)})  # {name}")
    # What the pattern returns: the ops read from outside the selection, or by nobody (the graph's outputs).
    outputs = [n for n in ops if not graph.consumers(n) or any(c.node not in values for c in graph.consumers(n))]
    lines.append(f"    return {', '.join(values[n] for n in outputs)}")
    chain = " -> ".join(ge_type(graph.op(n)) for n in ops)
    about = (f"Its pattern is the selection as it was: {chain}; the tensors it reads from outside the selection are "
             f"the pattern's inputs ({', '.join(map(str, inputs)) or 'none'}). It matches that structure and, until "
             "`replacement` builds the fused form, builds it again unchanged. Deploy it with "
             "ASCEND_GE_PY_PASS_PATH=/path/to/this_file.py (FuseLens: --py-pass this_file.py).")
    text = _FILE.format(count=len(ops), source=f" of {source}" if source else "", about=textwrap.fill(about, 100),
                        ops=", ".join(sorted({ge_type(graph.op(n)) for n in ops})), name=pass_name, cls=pass_name,
                        body="\n".join(lines))
    return Skeleton(text, pass_name, tuple(ops), tuple(map(str, inputs)), tuple(outputs))


_FILE = '''"""{name}: a ge.passes fusion pass started in FuseLens from {count} selected nodes{source}.

{about}
"""

from ge.es.all import {ops}
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


def selected_structure(inputs):
    """The selected nodes (each line names the one it stands for)."""
{body}


@register_fusion_pass(name="{name}", stage=PassStage.BEFORE_INFER_SHAPE)
class {cls}(PatternFusionPass):
    @pattern
    def selection(self, inputs):
        return selected_structure(inputs)

    def meet_requirements(self, match_result):
        # Refuse a match here: return False (context.set_error_message(...) says why).
        return True

    def replacement(self, inputs):
        # The fused form goes here; until then the matched structure is built again as it was.
        return selected_structure(inputs)
'''
