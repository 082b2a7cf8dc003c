"""New pass from selection, without the window: the skeleton of selected nodes is a ge.passes file that loads,
registers its pass, matches the structure it was made from, and (its replacement building that structure
again) leaves the numbers as they were; a selection it cannot write is refused by name."""

from __future__ import annotations

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.passes.config import PassConfig
from fuselens.passes.ge_python import load_pass_files
from fuselens.passes.ge_python.proof import prove
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.pass_skeleton import pattern_skeleton


def _run(tmp_path, graph, skeleton):
    path = tmp_path / "skeleton.py"
    path.write_text(skeleton.text)
    loaded = load_pass_files([path])
    assert [p.name for p in loaded.passes] == [skeleton.pass_name] and loaded.errors == []
    config = PassConfig.from_ids([]).with_py_passes([path])  # the skeleton's pass alone (and the general ones)
    return run_pipeline(graph, config)


def test_a_matmul_bias_add_selection_matches_itself_and_keeps_the_numbers(tmp_path, load_sample):
    graph = load_sample("matmul_add_chain")
    skeleton = pattern_skeleton(graph, ["dense1/BiasAdd", "dense1/MatMul"], pass_name="MyDensePass",
                                source="matmul_add_chain")
    assert skeleton.nodes == ("dense1/MatMul", "dense1/BiasAdd")  # topological, whatever the selection's order
    assert skeleton.inputs == ("input", "dense1/kernel/ReadVariableOp", "dense1/bias/ReadVariableOp")
    assert skeleton.outputs == ("dense1/BiasAdd",)
    assert "    mat_mul = MatMulV2(inputs[0], inputs[1])  # dense1/MatMul\n" in skeleton.text
    assert "    bias_add = BiasAdd(mat_mul, inputs[2])  # dense1/BiasAdd\n    return bias_add\n" in skeleton.text
    pipeline = _run(tmp_path, graph, skeleton)
    (match,) = pipeline.result("MyDensePass").matches  # dense2 is MatMul + Add, not BiasAdd
    assert {"dense1/MatMul", "dense1/BiasAdd"} <= set(match.nodes)
    assert prove(pipeline, seed=5).status == "equal"


def test_a_chain_of_three_returns_its_last_and_a_constant_selected_is_an_input(tmp_path, load_sample):
    graph = load_sample("matmul_add_chain")
    names = ["dense2/MatMul", "dense2/Add", "add_zero", "add_zero/y", "dense2/bias/resource"]
    skeleton = pattern_skeleton(graph, names, pass_name="MyChainPass")
    assert skeleton.nodes == ("dense2/MatMul", "dense2/Add", "add_zero")
    assert skeleton.inputs == ("dense1/Relu", "dense2/kernel/ReadVariableOp", "dense2/bias/resource", "add_zero/y")
    assert skeleton.outputs == ("add_zero",)
    (match,) = _run(tmp_path, graph, skeleton).result("MyChainPass").matches
    assert {"dense2/MatMul", "dense2/Add", "add_zero"} <= set(match.nodes)


def test_what_the_skeleton_refuses(load_sample):
    graph = load_sample("matmul_add_chain")
    with pytest.raises(FuseLensError, match="select the nodes of the pattern in the before pane first"):
        pattern_skeleton(graph, [])
    with pytest.raises(FuseLensError, match="a constant or a placeholder alone is no pattern"):
        pattern_skeleton(graph, ["add_zero/y", "input"])
    with pytest.raises(FuseLensError, match="'my pass' is no pass name"):
        pattern_skeleton(graph, ["add_zero"], pass_name="my pass")
    with pytest.raises(FuseLensError, match=r"no op function for FusedBatchNormV3 \(bn1\); its op table has .*GEMM"):
        pattern_skeleton(load_sample("conv_bn"), ["conv1", "bn1"])
