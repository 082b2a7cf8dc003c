"""Explanations: every number shown is recomputed here from the graphs, independently of passes/explain.py."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph import TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.base import Match
from fuselens.passes.explain_render import explanation_html, explanation_markdown
from fuselens.passes.pipeline import PipelineResult, run_pipeline
from tests.passes.amct_check import FLOAT, conv, placeholder, toy_graph


def matches_of(pipeline: PipelineResult, pass_id: str) -> list[Match]:
    result = pipeline.result(pass_id)
    assert result is not None and result.matches, f"{pass_id} found nothing"
    return result.matches


def value_of(graph, name: str) -> np.ndarray:
    """A constant seen through Identity reads (what a frozen Keras graph writes)."""
    value = graph.const_value(name)
    assert value is not None, name
    return value


def check_bn_fold(original, fused, match: Match) -> None:
    """The shown channel: γ, σ², ε, μ, β from the original BN, w and w′ from the two graphs' filters."""
    x, e = match.explanation, match.explanation["example"]
    bn, c = match.bindings["bn"], e["channel"]
    gamma, beta, mean, var = (value_of(original, original.input_node(bn, i)).reshape(-1)[c] for i in range(1, 5))
    eps = original.attr(bn, "epsilon")
    s = gamma / np.sqrt(var + eps)
    assert (e["γ"], e["β"], e["μ"], e["σ²"], e["ε"]) == pytest.approx((gamma, beta, mean, var, eps), rel=1e-6)
    assert e["s"] == pytest.approx(s, rel=1e-6)
    op = e.get("branch_op", match.bindings.get("op"))
    index = tuple(e["weight_index"])
    w = value_of(original, original.input_node(op, 1))[index]
    assert e["w"] == pytest.approx(w, rel=1e-6)
    folded = fused.const_value(e["folded_filter"])[index]  # the Const the rewrite wrote
    assert e["w_folded"] == pytest.approx(folded, rel=1e-6) and folded == pytest.approx(w * s, rel=1e-5)
    b = e["b"]
    assert e["b_formula"] == pytest.approx(beta + (b - mean) * s, rel=1e-5, abs=1e-6)
    saved = x["saved"]
    params = sum(value_of(original, original.input_node(bn, i)).nbytes for i in range(1, 5))
    new_bias = 0 if match.bindings.get("bias") or "branches" in match.details else fused.const_value(
        e["folded_bias"]).nbytes if e["folded_bias"] in fused else value_of(original, original.input_node(bn, 1)).nbytes
    branches = match.details.get("branches", [])  # a group conv gains a bias per branch: C values in all
    new_bias += sum(4 * (b["channel_range"][1] - b["channel_range"][0]) for b in branches)
    assert saved["weight_bytes_saved"] == params - new_bias  # γ, β, μ, σ² no longer read; b′ is
    assert saved["launches_saved"] == 1
    html = explanation_html(x)
    assert f"{e['w_folded']}" in html and "√" in html and f"{e['γ']}" in html


@pytest.fixture(scope="module")
def pipelines(load_sample):
    cache: dict[str, PipelineResult] = {}

    def get(name: str) -> PipelineResult:
        if name not in cache:
            cache[name] = run_pipeline(load_sample(name))
        return cache[name]

    return get


@pytest.mark.parametrize("sample, pass_id", [("conv_bn", "ConvBatchnormFusionPass"),
                                             ("depthwise_bn", "DepthwiseConvBatchnormFusionPass"),
                                             ("group_conv_bn", "GroupConvBatchnormFusionPass")])
def test_bn_folds_show_this_models_numbers(pipelines, sample, pass_id):
    pipeline = pipelines(sample)
    (match,) = matches_of(pipeline, pass_id)
    check_bn_fold(pipeline.original, pipeline.fused, match)


def random_conv_bn(rng: np.random.Generator, *, depthwise: bool):
    """Random weights and random BN statistics (mean of either sign, variance from 0.05 to 3)."""
    channels, mult = 6, 2
    shape = (3, 3, 3, mult) if depthwise else (3, 3, 3, channels)
    out = 3 * mult if depthwise else channels
    nodes = [placeholder("x", (1, 8, 8, 3)), make_const("w", rng.normal(0, 0.5, shape).astype(np.float32))]
    if depthwise:
        nodes.append(make_node("DepthwiseConv2dNative", "conv", ["x", "w"],
                               {"T": FLOAT, "strides": [1, 1, 1, 1], "padding": "SAME"}))
    else:
        nodes.append(conv("conv", "x", "w"))
    stats = {"gamma": rng.normal(1, 0.5, out), "beta": rng.normal(0, 1, out), "mean": rng.normal(0, 2, out),
             "variance": rng.uniform(0.05, 3, out)}
    nodes += [make_const(f"bn/{k}", v.astype(np.float32)) for k, v in stats.items()]
    nodes.append(make_node("FusedBatchNormV3", "bn", ["conv", *(f"bn/{k}" for k in stats)],
                           {"T": FLOAT, "U": FLOAT, "epsilon": float(rng.uniform(1e-5, 1e-2)), "is_training": False}))
    nodes.append(make_node("Relu", "out", ["bn"], {"T": FLOAT}))
    return toy_graph(*nodes)


@pytest.mark.parametrize("depthwise", [False, True])
def test_random_weights_and_statistics(depthwise):
    rng = np.random.default_rng(17 + depthwise)
    graph = random_conv_bn(rng, depthwise=depthwise)
    pass_id = "DepthwiseConvBatchnormFusionPass" if depthwise else "ConvBatchnormFusionPass"
    pipeline = run_pipeline(graph, [pass_id])
    (match,) = matches_of(pipeline, pass_id)
    check_bn_fold(graph, pipeline.fused, match)
    from fuselens.passes.registry import get_pass

    result = pipeline.result(pass_id)
    for channel in (1, 5):  # a channel past the first: depthwise channel = in * mult + m
        match.explanation = get_pass(pass_id).explain(graph, pipeline.fused, match, result.rewrites[0], channel=channel)
        assert match.explanation["example"]["channel"] == channel
        if depthwise:
            assert match.explanation["example"]["weight_index"] == [0, 0, channel // 2, channel % 2]
        check_bn_fold(graph, pipeline.fused, match)


def test_mul_fold_shows_scalar_weight_and_bias(pipelines):
    pipeline = pipelines("conv_bias_mul")
    (match,) = matches_of(pipeline, "OpBiasAddMulFusionPass")
    e, original, fused = match.explanation["example"], pipeline.original, pipeline.fused
    s = float(value_of(original, match.bindings["factor"]))
    index = tuple(e["weight_index"])
    w = value_of(original, match.bindings["filter"])[index]
    b = value_of(original, match.bindings["bias"]).reshape(-1)[e["channel"]]
    assert e["s"] == pytest.approx(s) and e["w"] == pytest.approx(w, rel=1e-6)
    assert e["w_folded"] == pytest.approx(fused.const_value(e["folded_filter"])[index], rel=1e-6)
    assert e["w_folded"] == pytest.approx(w * s, rel=1e-5) and e["b_formula"] == pytest.approx(b * s, rel=1e-5)
    assert match.explanation["saved"]["weight_bytes_saved"] == 4  # the float32 scalar
    assert match.explanation["saved"]["launches_saved"] == 1


def test_small_op_bn_names_each_term(pipelines):
    pipeline = pipelines("keras_bn_small_ops")
    original = pipeline.original
    by_variant = {m.details["variant"]: m for m in matches_of(pipeline, "SmallOpBatchnormFusionPass")}
    assert set(by_variant) == {"default", "center=False", "scale=False", "center=False, scale=False"}
    match = by_variant["default"]
    terms = {t["node"].rsplit("/", 1)[-1]: t["term"] for t in match.explanation["terms"]}
    assert terms == {"add": "σ² + ε", "Rsqrt": "1 / √(σ² + ε)", "mul": "s = γ / √(σ² + ε)", "mul_1": "x · s",
                     "mul_2": "μ · s", "sub": "β − μ · s", "add_1": "y = x · s + (β − μ · s)"}
    for node in match.explanation["terms"]:  # each named node is the op the table says
        assert original.op(node["node"]) == node["op"]
    e = match.explanation["example"]
    gamma = value_of(original, match.bindings["gamma"]).reshape(-1)[e["channel"]]
    var = value_of(original, match.bindings["variance"]).reshape(-1)[e["channel"]]
    eps = float(value_of(original, match.bindings["epsilon"]))
    assert e["s"] == pytest.approx(gamma / np.sqrt(var + eps), rel=1e-6)
    assert e["fused_inputs"]["γ"] == pytest.approx(gamma) and e["fused_inputs"]["σ²"] == pytest.approx(var)
    no_scale = by_variant["scale=False"].explanation
    assert no_scale["example"]["γ"] == 1.0 and "s = γ / √(σ² + ε)" not in {t["term"] for t in no_scale["terms"]}
    assert match.explanation["saved"]["launches_before"] == 7 and match.explanation["saved"]["launches_after"] == 1


def test_layer_norm_census_formula_and_wiring(pipelines):
    pipeline = pipelines("bert_layernorm")
    original = pipeline.original
    match = matches_of(pipeline, "ScopeLayerNormPass")[0]
    x = match.explanation
    for scope in x["census"]:
        members = [n.name for n in original if n.name.startswith(scope["scope"] + "/")]
        for feature in scope["features"]:
            if feature["op"]:
                count = sum(1 for n in members if original.op(n) == feature["op"]) or -1
                assert feature["found"] == count and feature["ok"]
    mean = next(n for n in match.nodes if n.endswith("moments/mean"))
    axes = original.const_value(original.input_node(mean, 1))
    assert x["attrs"]["begin_norm_axis"] == int(axes.reshape(-1)[0])
    assert "y = γ · (x − μ) / √(σ² + ε) + β" in x["formula"]
    add_y = next(n for n in match.nodes if n.endswith("batchnorm/add/y"))
    assert x["epsilon"] == pytest.approx(float(original.const_value(add_y)))
    inputs = [w["tensor"] for w in x["wiring"]["inputs"]]
    assert inputs == match.details["inputs"]
    assert x["wiring"]["inputs"][0]["rule"].endswith("batchnorm/mul_1")
    gamma_reader = x["wiring"]["inputs"][1]["inner"][0]
    assert gamma_reader.endswith("batchnorm/mul")
    assert len(x["saved"]["ops_after"]) == 1 and x["saved"]["launches_after"] == 1
    html = explanation_html(x)
    assert "✔" in html and "Wiring" in html


def tensor_size(graph, text: str) -> int:
    ref = TensorRef.parse(text)
    shape = graph.output_shape(ref.node, ref.port)
    attrs = graph.node(ref.node).attr
    dtype = attrs["T"].type if "T" in attrs else attrs["dtype"].type
    return int(np.prod(shape)) * proto.np_dtype(dtype).itemsize


def test_autofuse_bytes_are_the_intermediate_tensors(pipelines):
    pipeline = pipelines("abs_relu_exp")
    original = pipeline.original
    (match,) = matches_of(pipeline, "AutoFusePass")
    x = match.explanation
    assert [o["ascend_op"] for o in x["ops"]] == ["Abs", "Relu", "Exp"]
    assert x["category"] == "pointwise" and all(o["class"] == "elementwise" for o in x["ops"])
    assert {i["tensor"] for i in x["intermediates"]} == {"abs_0", "relu_0"}
    inner = tensor_size(original, "abs_0") + tensor_size(original, "relu_0")
    assert x["intermediate_bytes"] == inner
    size = tensor_size(original, "data1")  # every tensor here has the input's shape and dtype
    assert x["bytes_moved_before"] == 6 * size and x["bytes_moved_after"] == 2 * size
    assert x["bytes_moved_before"] - x["bytes_moved_after"] == 2 * inner  # each written once and read once
    assert x["saved"]["launches_saved"] == 2
    assert "_".join(x["name"]["parts"]) == x["name"]["kernel"] == "autofuse_pointwise_0_Abs_Relu_Exp"
    assert "Abs_Relu_Exp" in explanation_markdown(x)


def test_report_carries_explanations(pipelines):
    from fuselens.passes.report import build_report

    report = build_report(pipelines("demo"))
    matches = [m for p in report["passes"] for m in p["matches"]]
    assert matches and all("explanation" in m and "error" not in m["explanation"] for m in matches)


def test_scope_matches_share_one_scope_tree(load_sample, monkeypatch):
    """A pass's scope matches are explained from one tree of the graph it saw, not one tree per match."""
    import fuselens.passes.scope.scope_tree as scope_tree

    built = []

    class CountedTree(scope_tree.ScopeTree):
        def __init__(self, graph):
            built.append(graph)
            super().__init__(graph)

    monkeypatch.setattr(scope_tree, "ScopeTree", CountedTree)
    pipeline = run_pipeline(load_sample("bert_layernorm"))
    matches = matches_of(pipeline, "ScopeLayerNormPass")
    assert len(matches) == 2 and all(m.explanation["kind"] == "scope" for m in matches)
    assert built == [pipeline.original]


def test_fuse_builds_explanations_only_for_a_json_report(tmp_path, monkeypatch, capsys):
    import json

    import fuselens.passes.explain
    from fuselens.cli import main as cli_main

    explained = []
    attach = fuselens.passes.explain.attach_explanations
    monkeypatch.setattr(fuselens.passes.explain, "attach_explanations",
                        lambda *a: explained.append(a[-1].id) or attach(*a))
    assert cli_main(["fuse", "conv_bn", "-o", str(tmp_path / "fused.pb")]) == 0
    assert explained == []
    report_path = tmp_path / "report.json"
    assert cli_main(["fuse", "conv_bn", "--report", str(report_path)]) == 0
    conv_bn = next(p for p in json.loads(report_path.read_text())["passes"] if p["pass"] == "ConvBatchnormFusionPass")
    assert "ConvBatchnormFusionPass" in explained and conv_bn["matches"][0]["explanation"]["kind"] == "conv_bn"
    capsys.readouterr()


@pytest.mark.parametrize("sample", ["demo", "keras_bn_small_ops", "conv_bn_training"])
def test_printed_summary_without_a_report_is_the_reports(pipelines, sample):
    from fuselens.passes.report import build_report, format_pipeline, format_report

    pipeline = pipelines(sample)
    assert format_pipeline(pipeline, model=sample) == format_report(build_report(pipeline, model=sample))
