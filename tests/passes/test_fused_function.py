"""The fused node's FunctionDef is built with protobuf alone (passes/fused.py, core/graph/opdefs.py) and equals
what TensorFlow's importer and `graph_to_function_def` make of the same subgraph
(tests/passes/function_reference.py), on every sample and on the Keras zoo, with every pass on; and
`fuselens fuse` of the samples never imports TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format

import fuselens.passes.fused as fused
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import SAMPLES
from fuselens.core.graph import Graph, opdefs, proto
from fuselens.core.graph.nodes import make_node
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import catalog
from tests.passes.function_reference import tensorflow_function

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = [name for name, sample in SAMPLES.items() if not sample.cached]
# Samples whose every-pass fusion builds at least one function (scope fusion or an AutoFuse kernel).
WITH_FUNCTIONS = [name for name in [*COMMITTED, "mobilenet_v2"]
                  if {"scope", "autofuse"} & set(SAMPLES[name].families)]


def every_pass() -> PassConfig:
    return (PassConfig.from_ids([c.id for c in catalog()])
            .with_autofuse_flags("--enable_autofuse=true;--autofuse_enable_pass=reduce,concat"))


def assert_functions_match_tensorflow(graph: Graph, monkeypatch: pytest.MonkeyPatch) -> int:
    """Fuse with every pass on, building each function both ways; they must be equal. Returns how many."""
    pairs: list[tuple[proto.FunctionDef, proto.FunctionDef]] = []
    without_tensorflow = fused.build_function

    def both(graph: Graph, nodes, inputs, outputs, name):  # build_function's signature
        built = without_tensorflow(graph, nodes, inputs, outputs, name)
        pairs.append((built, tensorflow_function(graph, nodes, inputs, outputs, name)))
        return built

    monkeypatch.setattr(fused, "build_function", both)
    pipeline = run_pipeline(graph, every_pass())
    assert not pipeline.errors
    for built, reference in pairs:
        assert built == reference, (f"{built.signature.name} differs from TensorFlow's:\n"
                                    f"{text_format.MessageToString(built)}\n---\n{text_format.MessageToString(reference)}")
    return len(pairs)


@pytest.mark.parametrize("name", WITH_FUNCTIONS)
def test_functions_equal_tensorflows_on_every_sample(name: str, load_sample, monkeypatch) -> None:
    assert assert_functions_match_tensorflow(load_sample(name), monkeypatch) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["EfficientNetB0", "MobileNetV3Small", "InceptionV3", "Xception", "NASNetMobile",
                                  "ConvNeXtTiny", "ResNet50", "DenseNet121"])
def test_functions_and_dtypes_equal_tensorflows_on_the_keras_zoo(name: str, monkeypatch) -> None:
    from fuselens.core.formats.tfshapes import infer_tensors
    from tests.zoo.models import zoo_model

    graph = load_model(str(zoo_model(name))).graph
    ours = {(node, port): out.dtype for node in graph.nodes for port, out in enumerate(graph.node_outputs(node))}
    assert ours == {key: dtype for key, (dtype, _) in infer_tensors(graph).items()}
    assert assert_functions_match_tensorflow(graph, monkeypatch) > 0


NO_TENSORFLOW = r"""
import json, sys
from fuselens.cli import main
codes = {name: main(["fuse", name, "-o", f"{sys.argv[1]}/{name}.pb"]) for name in sys.argv[2:]}
print(json.dumps({"codes": codes, "tensorflow": "tensorflow" in sys.modules}))
"""


def test_fuse_of_every_sample_never_imports_tensorflow(tmp_path, load_sample) -> None:
    names = [*COMMITTED, "mobilenet_v2"]
    load_sample("mobilenet_v2")  # built (with TensorFlow) here, so the child only reads the cached file
    done = subprocess.run([sys.executable, "-c", NO_TENSORFLOW, str(tmp_path), *names], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"codes": dict.fromkeys(names, 0), "tensorflow": False}
    fused_demo = Graph.from_bytes((tmp_path / "demo.pb").read_bytes())
    assert fused_demo.functions and all("_output_shapes" in node.attr for node in fused_demo)


@pytest.mark.parametrize("name", [*COMMITTED, "mobilenet_v2"])
def test_every_output_dtype_equals_tensorflows_inference(name: str, load_sample) -> None:
    """The op table gives every node of every sample the outputs and dtypes TensorFlow infers."""
    from fuselens.core.formats.tfshapes import infer_tensors

    graph = load_sample(name)
    inferred = infer_tensors(graph)
    ours = {(node, port): out.dtype for node in graph.nodes for port, out in enumerate(graph.node_outputs(node))}
    assert ours == {key: dtype for key, (dtype, _) in inferred.items()}


def test_outputs_expand_number_and_type_list_attributes() -> None:
    split = make_node("Split", "split", ["axis", "x"], {"T": proto.AttrValue(type=proto.DT_HALF), "num_split": 3})
    identity_n = make_node("IdentityN", "idn", ["a", "b"])
    identity_n.attr["T"].list.type.extend([proto.DT_INT32, proto.DT_FLOAT])
    fbn = make_node("FusedBatchNormV3", "bn", [], {"T": proto.AttrValue(type=proto.DT_HALF),
                                                    "U": proto.AttrValue(type=proto.DT_FLOAT)})
    outputs = {node.name: [(o.arg, o.index, o.dtype) for o in opdefs.op_info(node.op, {}).node_outputs(node)]
               for node in (split, identity_n, fbn)}
    assert outputs["split"] == [("output", i, proto.DT_HALF) for i in range(3)]
    assert outputs["idn"] == [("output", 0, proto.DT_INT32), ("output", 1, proto.DT_FLOAT)]
    assert outputs["bn"][:2] == [("y", 0, proto.DT_HALF), ("batch_mean", 0, proto.DT_FLOAT)]
    assert len(outputs["bn"]) == 6


def test_a_library_function_is_its_own_op_definition(load_sample) -> None:
    fused_graph = run_pipeline(load_sample("abs_relu_exp"), PassConfig.default()).fused
    call = next(node for node in fused_graph if node.op in fused_graph.functions)
    signature = fused_graph.functions[call.op].signature
    assert [(o.arg, o.dtype) for o in fused_graph.node_outputs(call.name)] == \
        [(a.name, a.type) for a in signature.output_arg]


def test_an_op_missing_from_the_table_comes_from_tensorflows_registry(monkeypatch) -> None:
    table = {k: v for k, v in opdefs._table().items() if k != "Relu6"}
    monkeypatch.setattr(opdefs, "_table", lambda: table)
    opdefs._registered.cache_clear()
    try:
        node = make_node("Relu6", "r", ["x"], {"T": proto.AttrValue(type=proto.DT_FLOAT)})
        assert [(o.arg, o.dtype) for o in opdefs.op_info("Relu6", {}).node_outputs(node)] == \
            [("activations", proto.DT_FLOAT)]
        with pytest.raises(FuseLensError, match="neither a TensorFlow op nor a function"):
            opdefs.op_info("NoSuchOpAnywhere", {})
    finally:
        opdefs._registered.cache_clear()
