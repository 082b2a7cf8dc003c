"""The exported NPU script: valid Python in both modes, carrying the passes in all three switch forms."""

from __future__ import annotations

import ast

import pytest

from core.errors import FuseLensError
from core.runtime.npu_script import render_npu_script
from core.runtime.switch_file import FusionSwitches, SwitchForms

FORMS = SwitchForms(["ScopeInstanceNormPass"], "--enable_autofuse=true;--autofuse_enable_pass=reduce,concat",
                    FusionSwitches(graph_fusion={"ScopeLayerNormPass": "on", "ScopeInstanceNormPass": "on",
                                                 "ConvBatchnormFusionPass": "off", "AutoFusePass": "on"}))
GRAPHS = {"original": ("m_original.pb", ["exp_0:0"]), "fused": ("m_fused.pb", ["autofuse_pointwise_0:0"])}


def _constants(text: str) -> dict[str, object]:
    tree = ast.parse(text)
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
            and isinstance(node.value, (ast.Constant, ast.List, ast.Dict))}


@pytest.mark.parametrize(("mode", "adapter"), [("tf1", "npu_bridge"), ("tf2-compat", "npu_device")])
def test_script_compiles_and_carries_all_three_switch_forms(mode, adapter):
    text = render_npu_script(mode=mode, model="abs_relu_exp", graphs=GRAPHS, inputs={"data1": ("float16", (128, 192))},
                             forms=FORMS, steps=100, warmup=5)
    compile(text, "run_on_npu.py", "exec")
    constants = _constants(text)
    assert constants["MODE"] == mode and constants["STEPS"] == 100 and constants["WARMUP"] == 5
    assert constants["SCOPE_PASSES"] == ["ScopeInstanceNormPass"]
    assert constants["AUTOFUSE_FLAGS"] == "--enable_autofuse=true;--autofuse_enable_pass=reduce,concat"
    assert '"ScopeInstanceNormPass": "on"' in constants["FUSION_SWITCH_JSON"]
    assert '"ConvBatchnormFusionPass": "off"' in constants["FUSION_SWITCH_JSON"]
    assert "AutoFusePass:on" in constants["FUSION_SWITCH_LINES"]
    assert constants["INPUTS"] == {"data1": ("float16", [128, 192])}
    assert constants["GRAPHS"]["fused"] == ("m_fused.pb", ["autofuse_pointwise_0:0"])
    # the session set-up the script uses is the one the runner's NPU backend uses
    for needle in ('parameter_map["enable_scope_fusion_passes"]', 'parameter_map["fusion_switch_file"]',
                   'parameter_map["use_off_line"].b = True', '"aic_metrics": "PipeUtilization"',
                   'os.environ["AUTOFUSE_FLAGS"]', '"--export=on"', f"import {adapter}"):
        assert needle in text


def test_unknown_mode_is_an_error():
    with pytest.raises(FuseLensError, match="unknown mode 'tf3'"):
        render_npu_script(mode="tf3", model="m", graphs=GRAPHS, inputs={}, forms=FORMS)


def test_npu_session_config_carries_the_switches_and_profiling(tmp_path):
    """The ConfigProto the NPU backend and the script build (TensorFlow builds it without an NPU)."""
    import json

    import tensorflow as tf

    from core.runtime.npu_session import npu_session_config

    config = npu_session_config(tf, ["ScopeInstanceNormPass"], "/x/fusion_switch.json", str(tmp_path / "original"))
    [optimizer] = config.graph_options.rewrite_options.custom_optimizers
    params = optimizer.parameter_map
    assert optimizer.name == "NpuOptimizer" and params["use_off_line"].b and params["profiling_mode"].b
    assert params["enable_scope_fusion_passes"].s == b"ScopeInstanceNormPass"
    assert params["fusion_switch_file"].s == b"/x/fusion_switch.json"
    profiling = json.loads(params["profiling_options"].s)
    assert profiling["output"] == str(tmp_path / "original") and profiling["aic_metrics"] == "PipeUtilization"
    assert config.graph_options.rewrite_options.remapping == 2  # RewriterConfig.OFF
