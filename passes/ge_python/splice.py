"""A replacement graph written into a FuseLens graph in place of one match, as GE's SubgraphRewriter
replaces a boundary: replacement input i reads the tensor pattern input i matched, readers of pattern
output k read replacement output k, and the matched nodes (inputs excluded) go.

Every replacement op becomes a TensorFlow node, so the fused graph stays one TensorFlow can run:
* an op TensorFlow has is written as that op (GE's MatMulV2 as MatMul, transpose_x1 as transpose_a);
* a GE-only op with a TensorFlow expansion (optable.EXPANSIONS: GEMM) is a fused call node
  (`_fused_op_type` GEMM, the contract of core/graph/fused.py) whose library function computes the
  expansion; its numbers are then TensorFlow's own;
* a GE-only op without one is a fused call node whose function is the matched subgraph, marked
  `_ge_structure_only`: drawn and runnable, but no proof of the rewrite (passes/ge_python/proof.py
  says "structure only").
A replacement output node takes the name of the graph node it replaces when that node goes, so the
graph's outputs keep their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, GraphEditor, TensorRef, proto
from fuselens.core.graph.fused import FUSED_NODES_ATTR, FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.fused import build_function, function_name
from fuselens.passes.ge_python.api.builder import BuiltGraph, PatternNode
from fuselens.passes.ge_python.matcher import Found
from fuselens.passes.ge_python.optable import EXPANSIONS, OpSpec

STRUCTURE_ONLY_ATTR = "_ge_structure_only"
# Type attributes of TensorFlow ops other than T, set from the data type of the input they describe.
_INDEX_TYPE_ATTRS = {"Reshape": ("Tshape", 1), "Transpose": ("Tperm", 1), "Mean": ("Tidx", 1), "Sum": ("Tidx", 1)}


class ReplacementError(ValueError):
    """A replacement GE would refuse (its inputs or outputs do not fit the match)."""


@dataclass
class Spliced:
    removed: tuple[str, ...]
    created: tuple[str, ...]
    outputs: dict[str, str] = field(default_factory=dict)  # pattern output tensor -> the tensor that replaces it
    structure_only: tuple[str, ...] = ()  # GE-only op types written without a TensorFlow equivalent


def splice(graph: Graph, editor: GraphEditor, found: Found, replacement: BuiltGraph, pass_name: str) -> Spliced:
    """Write `replacement` into `editor` in place of `found` (see the module docstring)."""
    if not isinstance(replacement, BuiltGraph):
        raise ReplacementError(f"replacement returned {type(replacement).__name__}, not a Graph")
    if len(replacement.outputs) != len(found.outputs):
        raise ReplacementError(f"the replacement has {len(replacement.outputs)} outputs, the pattern "
                               f"{len(found.outputs)}")
    for index in replacement.inputs():
        if index not in found.inputs:
            raise ReplacementError(f"replacement input {index} has no pattern input to read "
                                   f"(the pattern has inputs {sorted(found.inputs)})")
    removed = tuple(found.matched(graph))
    editor.remove(*removed)
    names = _node_names(editor, found, replacement, set(removed))
    refs: dict[int, TensorRef] = {}
    created: list[str] = []
    structure_only: list[str] = []
    # new nodes go after the last node the match reads (a removed node's name may be taken by one of them)
    read = graph.in_graph_order({ref.node for ref in found.inputs.values()} - set(removed))
    anchor = read[-1] if read else None
    for node in replacement.nodes:
        if node.is_data:
            refs[id(node)] = found.inputs[node.index]
            continue
        inputs = [refs[id(t.node)] if t.node.is_data else TensorRef(names[id(t.node)], t.index) for t in node.inputs]
        name = names[id(node)]
        if node.is_const:
            made = make_const(name, np.asarray(node.value))
        else:
            assert node.spec is not None
            made = _op_node(graph, editor, node, node.spec, name, inputs, found, pass_name, removed)
            if STRUCTURE_ONLY_ATTR in made.attr:
                structure_only.append(node.op_type)
        shapes = _output_shapes(graph, found, replacement, node)
        editor.add(made, after=anchor, shapes=shapes)
        refs[id(node)] = TensorRef(name)
        created.append(name)
    outputs: dict[str, str] = {}
    for old, new_tensor in zip(found.outputs, replacement.outputs):
        new = refs[id(new_tensor.node)] if new_tensor.node.is_data else TensorRef(names[id(new_tensor.node)],
                                                                                  new_tensor.index)
        outputs[str(old)] = str(new)
        if str(old) != str(new):
            editor.redirect(old, new)
    first_output = TensorRef.parse(next(iter(outputs.values()))).node if outputs else None
    for name in removed:  # a node that waited on a matched node waits on the replacement's first output
        if first_output is not None:
            editor.redirect_control(name, first_output)
    return Spliced(removed, tuple(created), outputs, tuple(dict.fromkeys(structure_only)))


def _node_names(editor: GraphEditor, found: Found, replacement: BuiltGraph, removed: set[str]) -> dict[int, str]:
    """Each replacement node's name: an output node the name of the graph node it replaces (when that one
    goes and it is output 0 of it), the others `<anchor>/<label>` made unique."""
    names: dict[int, str] = {}
    for old, new in zip(found.outputs, replacement.outputs):
        if not new.node.is_data and old.port == 0 and new.index == 0 and old.node in removed \
                and id(new.node) not in names and old.node not in names.values():
            names[id(new.node)] = old.node
    base = found.coordinate
    for node in replacement.nodes:
        if not node.is_data and id(node) not in names:
            names[id(node)] = editor.unique_name(f"{base}/{node.label}")
    return names


def _dtype(graph: Graph, editor: GraphEditor, ref: TensorRef) -> int:
    """The data type of a tensor of the graph being edited."""
    if ref.node in graph and ref.node in editor and editor.node(ref.node) is graph.node(ref.node):
        try:
            return graph.output_dtype(ref.node, ref.port)
        except FuseLensError:  # a GE op of a dump: no TensorFlow definition to read it from
            return proto.DT_FLOAT
    node = editor.node(ref.node)
    for key in ("T", "dtype"):
        if key in node.attr:
            return node.attr[key].type
    return proto.DT_FLOAT


def _op_node(graph: Graph, editor: GraphEditor, node: PatternNode, spec: OpSpec, name: str,
             inputs: list[TensorRef], found: Found, pass_name: str, removed: tuple[str, ...]) -> proto.NodeDef:
    dtype = _dtype(graph, editor, inputs[0]) if inputs else proto.DT_FLOAT
    attrs = node.ir_attrs()
    if spec.tf_name is not None:
        tf_attrs = {spec.tf_attr(k): v for k, v in attrs.items() if k in spec.tf_attrs or k in ("data_format",
                                                                                              "strides", "dilations")}
        made = make_node(spec.tf_name, name, [str(r) for r in inputs], tf_attrs)
        made.attr["T"].type = dtype
        extra = _INDEX_TYPE_ATTRS.get(spec.tf_name)
        if extra is not None and len(inputs) > extra[1]:
            made.attr[extra[0]].type = _dtype(graph, editor, inputs[extra[1]])
        return made
    function = _expansion(spec, attrs, dtype, function_name(name), len(inputs))
    structure_only = function is None
    if function is None:  # no TensorFlow equivalent: the call runs the matched subgraph, for drawing only
        body_inputs = [found.inputs[i] for i in sorted(found.inputs)]
        function = build_function(graph, list(removed), body_inputs, found.outputs[:1], function_name(name))
        inputs = body_inputs
    suffix = 1
    base_name = function.signature.name
    while editor.has_function(function.signature.name):
        function.signature.name = f"{base_name}_{suffix}"
        suffix += 1
    editor.add_function(function)
    made = make_node(function.signature.name, name, [str(r) for r in inputs])
    made.attr[FUSION_PASS_ATTR].s = pass_name.encode()
    made.attr[FUSED_OP_TYPE_ATTR].s = spec.ge_type.encode()
    made.attr[FUSED_NODES_ATTR].list.s.extend(n.encode() for n in removed)
    for key, value in attrs.items():
        if not key.startswith("_"):
            made.attr[f"_ge_{key}"].CopyFrom(make_node("NoOp", "x", (), {key: value}).attr[key])
    if structure_only:
        made.attr[STRUCTURE_ONLY_ATTR].b = True
    return made


def _expansion(spec: OpSpec, attrs: dict, dtype: int, name: str, inputs: int) -> proto.FunctionDef | None:
    """The library function computing a GE-only op in TensorFlow ops, None when there is no expansion."""
    if spec.ge_type not in EXPANSIONS or spec.ge_type != "GEMM" or inputs != 5:
        return None
    function = proto.FunctionDef()
    function.signature.name = name
    for arg in ("a", "b", "c", "alpha", "beta"):
        function.signature.input_arg.add(name=arg, type=dtype)
    function.signature.output_arg.add(name="y", type=dtype)
    body = [make_node("MatMul", "product", ["a", "b"], {"transpose_a": bool(attrs.get("transpose_a")),
                                                        "transpose_b": bool(attrs.get("transpose_b"))}),
            make_node("Mul", "scaled_product", ["product:product:0", "alpha"]),
            make_node("Mul", "scaled_c", ["c", "beta"]),
            make_node("AddV2", "sum", ["scaled_product:z:0", "scaled_c:z:0"])]
    for node in body:
        node.attr["T"].type = dtype
        function.node_def.add().CopyFrom(node)
    function.ret["y"] = "sum:z:0"
    return function


def _output_shapes(graph: Graph, found: Found, replacement: BuiltGraph,
                   node: PatternNode) -> list[tuple[int | None, ...] | None] | None:
    """The static shape of a replacement node that produces a pattern output (the output's), else of a
    constant (its value); None for an inner op."""
    if node.is_const and node.value is not None:
        return [tuple(np.asarray(node.value).shape)]
    for old, new in zip(found.outputs, replacement.outputs):
        if new.node is node:
            return [graph.output_shape(old.node, old.port)]
    return None
