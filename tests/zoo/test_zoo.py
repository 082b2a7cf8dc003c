"""The Keras zoo fuses and agrees: eight applications, default passes and every pass on.

Each model (tests/zoo/models.py: random weights and BatchNorm statistics, logits) runs twice
unfused first: a model whose own output moves between two runs cannot prove a fusion, and the
test says so instead of passing or skipping. Then the fused graph runs on the same seeded
inputs and must agree relative to the output's scale (max |fused - original| / max |original|),
since logits of random networks have no natural per-element tolerance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from fuselens.cli import main as cli_main
from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.measure.compare import pair_outputs
from fuselens.core.runtime.lowering import LAYER_NORM, XLA_KERNEL
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import catalog
from tests.zoo.models import BERT_NAME, ZOO, zoo_model
from tests.zoo.zoo_check import SCALE_TOLERANCE, assert_agrees, relative_error


def every_pass() -> PassConfig:
    """Every pass of the catalog on, and AutoFuse's off-by-default reduce and concat kernels too."""
    return (PassConfig.from_ids([c.id for c in catalog()])
            .with_autofuse_flags("--enable_autofuse=true;--autofuse_enable_pass=reduce,concat"))


CONFIGS = {"default": PassConfig.default, "every_pass": every_pass}


@dataclass
class Reference:
    graph: Graph
    feeds: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    instability: float  # max relative difference between two runs of the original


_last: dict[str, Reference] = {}  # one model at a time: they are up to 115 MB each


def reference(name: str) -> Reference:
    if name not in _last:
        _last.clear()
        graph = load_model(zoo_model(name)).graph
        feeds = random_feeds(graph, seed=0)
        first, second = run_graph(graph, feeds), run_graph(graph, feeds)
        instability = max(relative_error(first[k], second[k]) for k in first)
        _last[name] = Reference(graph, feeds, first, instability)
    return _last[name]


@pytest.mark.slow
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_fuses_and_agrees(name: str, config: str) -> None:
    ref = reference(name)
    assert ref.instability <= SCALE_TOLERANCE, (
        f"{name}: the original model's own output is unstable between two runs (relative difference "
        f"{ref.instability:.2e}), so a comparison with the fused graph proves nothing")
    pipeline = run_pipeline(ref.graph, CONFIGS[config]())
    assert sum(len(r.matches) for r in pipeline.results) > 0, f"{name}: nothing fused"
    assert_agrees(pipeline, ref.feeds, ref.outputs, f"{name} ({config}; two original runs: {ref.instability:.1e})")


@pytest.mark.slow
def test_efficientnet_b0_fuses_from_the_command_line(tmp_path, capsys) -> None:
    """Used to end in `ValueError: cannot reshape array of size 0 into shape ()` (an empty scalar constant)."""
    out = tmp_path / "fused.pb"
    assert cli_main(["fuse", str(zoo_model("EfficientNetB0")), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "AutoFusePass" in captured.out
    assert load_model(out).graph.op_histogram()["AscBackend"] > 0


def test_an_empty_scalar_constant_moves_into_an_autofuse_kernel() -> None:
    """EfficientNet's Rescaling offset: `Const` with a shape and no values, i.e. 0.0 (TensorFlow's rule)."""
    float_attr = proto.AttrValue(type=proto.DT_FLOAT)
    shape = proto.AttrValue(shape=proto.shape_proto([4, 8]))
    empty = proto.TensorProto(dtype=proto.DT_FLOAT, tensor_shape=proto.shape_proto([]))
    nodes = [
        make_node("Placeholder", "x", attrs={"dtype": float_attr, "shape": shape}),
        make_const("rescaling/Cast/x", np.float32(1 / 255)),
        make_node("Const", "rescaling/Cast_1/x", attrs={"dtype": float_attr, "value": proto.AttrValue(tensor=empty)}),
        make_node("Mul", "rescaling/mul", ["x", "rescaling/Cast/x"], {"T": float_attr}),
        make_node("AddV2", "rescaling/add", ["rescaling/mul", "rescaling/Cast_1/x"], {"T": float_attr}),
        make_node("Abs", "abs", ["rescaling/add"], {"T": float_attr}),
        make_node("Relu", "relu", ["abs"], {"T": float_attr}),
    ]
    graph = Graph.from_nodes(nodes, source="toy")
    pipeline = run_pipeline(graph)
    assert pipeline.fused.op_histogram().get("AscBackend") == 1
    feeds = random_feeds(graph, seed=0)
    (pair,) = pair_outputs(graph, pipeline.fused, pipeline.provenance.original_to_final())
    want = run_graph(graph, feeds, [pair[0]])[pair[0]]
    np.testing.assert_allclose(run_graph(pipeline.fused, feeds, [pair[1]])[pair[1]], want, rtol=1e-6)
    np.testing.assert_allclose(want, np.maximum(np.abs(feeds["x"] / 255), 0), rtol=1e-6)


@pytest.mark.slow
def test_the_tf_keras_bert_runs_on_cpu_as_its_own_math(capsys) -> None:
    """The runner's CPU path on a BERT: TensorFlow's remapper would build its LayerNorms (epsilon 1e-12)
    with epsilon 0.001 and the original would "disagree" with the fused graph's AutoFuse LayerNorm
    tails (max abs 0.0038 before this was found); the tails run as their original ops, so oneDNN's
    LayerNorm stays on both sides (its speed is benchmarks/bench_runtime.py's, not a test's)."""
    assert cli_main(["run", str(zoo_model(BERT_NAME)), "--steps", "3", "--warmup", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["allclose"] is True
    fused = result["graphs"]["fused"]
    tails = [name for name, how in fused["execution"].items() if how == LAYER_NORM]
    assert len(tails) == 5 and all("Rsqrt" in name for name in tails)
    # The bias adds, query scalings, GELU parts and residuals after its einsums and matmuls run as their ops
    # too (XLA's CPU code was slower for them): no AutoFuse node is left an XLA kernel on CPU.
    assert XLA_KERNEL not in fused["execution"].values()
    norms = ("5 LayerNorms built as oneDNN's _MklLayerNorm with the graph's epsilon 1e-12 "
             "(TensorFlow's remapper would use 0.001)")
    assert result["graphs"]["original"]["execution_notes"] == [norms]
    contraction_tails, fused_norms = fused["execution_notes"]
    assert fused_norms == norms
    assert contraction_tails.startswith("8 AutoFuse kernels ran as their 20 original ops on CPU")


@pytest.mark.slow
def test_without_onednn_the_tf_keras_bert_runs_as_tensorflow_runs_it(capsys, monkeypatch) -> None:
    """TensorFlow's default on an x86 CPU without AVX-512 or AMX: no _MklLayerNorm to build, the LayerNorm tails
    run as their original ops, and the two graphs still agree."""
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")  # the runner's child inherits it
    assert cli_main(["run", str(zoo_model(BERT_NAME)), "--steps", "2", "--warmup", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["allclose"] is True and result["graphs"]["original"]["execution_notes"] == []
    fused = result["graphs"]["fused"]
    assert sum(how == LAYER_NORM for how in fused["execution"].values()) == 5
    assert not any("_MklLayerNorm" in note for note in fused["execution_notes"])
