"""What is drawn: constants folded into consumers, scope collapse, labels from what the graph knows, op classes."""

from __future__ import annotations

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.fused import FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR
from fuselens.core.graph.nodes import make_node
from fuselens.core.graph.opclass import BORDER, CATEGORY_TITLES, PALETTE, op_category, ops_in
from fuselens.core.layout import SCOPE_PREFIX, collapsible_scopes, visible_graph


def test_constants_and_identity_reads_are_drawn_inside_their_consumer(load_sample):
    graph = load_sample("demo")
    view = visible_graph(graph)
    read_constants = {n.name for n in graph if graph.is_const(n.name) and graph.consumer_nodes(n.name)}
    assert len(read_constants) > 20 and not read_constants & set(view.nodes)
    assert "Identity" not in {node.op for node in view.nodes.values()}  # every Identity here reads a constant
    conv = view.nodes["stem/conv"]
    assert conv.weights == ("stem/conv/kernel/ReadVariableOp",)
    assert conv.weight_text == "3×3×3×16"
    assert view.owner["stem/conv/kernel/resource"] == "stem/conv"  # the Const behind the Identity too
    assert set(view.owner) == set(graph.nodes)
    # weights are not edges; the data edge carries its shape
    assert all(e.source in view.nodes and e.target in view.nodes for e in view.edges)
    edge = next(e for e in view.edges if e.source == "stem/conv" and e.target == "stem/bn")
    assert edge.label == "1×32×32×16"


def test_a_fused_node_shows_the_op_it_stands_for():
    dtype = {"dtype": proto.AttrValue(type=proto.DT_FLOAT)}
    call = make_node("fused_LayerNorm_fn", "ln", ["x"], {FUSION_PASS_ATTR: b"scope-layernorm",
                                                          FUSED_OP_TYPE_ATTR: b"LayerNorm"})
    graph = Graph.from_nodes([make_node("Placeholder", "x", attrs=dtype), call], validate=False)
    box = visible_graph(graph).nodes["ln"]
    assert box.op == "LayerNorm" and box.category == "fused"


def test_edge_labels_never_start_shape_inference(load_sample):
    bare = proto.GraphDef()
    bare.CopyFrom(load_sample("conv_bn").graph_def)
    del bare.node[-1].attr["_output_shapes"]  # one node without a recorded shape: TF would have to infer
    graph = Graph(bare)
    view = visible_graph(graph)
    assert view.edges and not any(e.label for e in view.edges)
    assert not graph.shapes_ready


def test_unread_constants_stay_visible(load_sample):
    graph = load_sample("demo")
    unread = [n.name for n in graph if n.op == "Const" and not graph.consumer_nodes(n.name)]
    assert unread  # the demo has a few (depthwise Shape and dilation_rate)
    assert set(unread) <= set(visible_graph(graph).nodes)


def test_a_collapsed_scope_is_one_box_and_nested_collapse_takes_the_outermost(load_sample):
    graph = load_sample("bert_layernorm")
    full = visible_graph(graph)
    scope = next(s for s in full.scopes if s.endswith("LayerNorm"))
    inner = scope + "/batchnorm"
    assert inner in full.scopes
    members = [k for k in full.nodes if k.startswith(scope + "/")]
    collapsed = visible_graph(graph, {scope, inner})
    box = collapsed.nodes[SCOPE_PREFIX + scope]
    assert sorted(box.members) == sorted(members)
    assert box.op == "scope" and f"({len(members)} ops)" in box.title
    assert not set(members) & set(collapsed.nodes)
    assert all(collapsed.owner[m] == SCOPE_PREFIX + scope for m in members)
    assert all(e.source != e.target for e in collapsed.edges)
    assert len(collapsed.nodes) == len(full.nodes) - len(members) + 1


def test_collapsible_scopes_need_two_nodes():
    assert collapsible_scopes(["a/b/x", "a/b/y", "a/c", "d/e"]) == ("a", "a/b")


def test_op_classes_share_one_palette():
    assert op_category("Conv2D") == "conv" and op_category("MatMul") == "conv"
    assert op_category("Relu") == "elementwise" and op_category("Mean") == "reduce"
    assert op_category("FusedBatchNormV3") == "norm" and op_category("ConcatV2") == "data"
    assert op_category("fused_LayerNorm_fn", fused=True) == "fused" and op_category("NoSuchOp") == "other"
    assert set(PALETTE) == set(BORDER) == set(CATEGORY_TITLES)
    listed = [ops_in(c) for c in CATEGORY_TITLES]
    assert sum(len(s) for s in listed) == len(frozenset().union(*listed))  # no op in two classes
