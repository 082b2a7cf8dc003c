"""The bundle's scripts: bundle.json per side, the driver's per-side environment, the session set-up.

The driver runs on the Ascend host's Python (3.7 for TF 1.15), so it is checked to parse as 3.7 and to
import nothing of FuseLens; tests/cli/test_npu_bundle.py runs it for real against a stub host.
"""

from __future__ import annotations

import ast
import importlib.util
import json

import pytest

from fuselens.core.ascend.npu_script import DRIVER_SOURCE, DUMP, MODES, SESSION_SOURCE, bundle_spec, side_spec


def _driver():
    spec = importlib.util.spec_from_file_location("npu_driver_under_test", DRIVER_SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _spec(skip: str | None = "switches/fused/autofuse_skip.ini") -> dict:
    sides = {side: side_spec(graph=f"{side}.pb", fetches=["exp_0:0"], scope_passes=scope, autofuse_flags=flags,
                             fusion_switch_file=f"switches/{side}/fusion_switch.json",
                             autofuse_skip_file=skip if side == "fused" else None)
             for side, scope, flags in (("original", [], "--enable_autofuse=false"),
                                        ("fused", ["ScopeInstanceNormPass"], "--enable_autofuse=true"))}
    return bundle_spec(model="abs_relu_exp", mode="tf1", inputs={"data1": ("float16", (128, 192))}, sides=sides,
                       steps=100, warmup=5, import_command="fuselens import-profile {results} --model abs_relu_exp")


def test_bundle_spec_names_the_target_and_both_sides():
    spec = json.loads(json.dumps(_spec()))
    assert (spec["mode"], spec["tensorflow"], spec["adapter"]) == ("tf1", "1.15.0", "npu_bridge")
    assert spec["inputs"] == {"data1": ["float16", [128, 192]]} and spec["dump"] == DUMP
    assert list(spec["sides"]) == ["original", "fused"] and spec["steps"] == 100 and spec["warmup"] == 5
    assert set(MODES) == {"tf1", "tf2-compat"}
    with pytest.raises(ValueError, match="exactly the sides"):
        bundle_spec(model="m", mode="tf1", inputs={}, sides={"fused": {}}, steps=1, warmup=0, import_command="")


def test_each_side_gets_its_own_environment_and_nothing_leaks_from_the_parent(tmp_path):
    driver = _driver()
    parent = {"PATH": "/bin", "AUTOFUSE_FLAGS": "--enable_autofuse=true", "AUTOFUSE_DFX_FLAGS": "--x=y",
              "DUMP_GRAPH_PATH": "/elsewhere", "ASCEND_PROCESS_LOG_PATH": "/var/log/npu",
              "ASCEND_GLOBAL_LOG_LEVEL": "3"}
    results = str(tmp_path / "results")
    original = driver.side_environment(_spec(), "original", results, base=parent)
    fused = driver.side_environment(_spec(), "fused", results, base=parent)
    assert original["AUTOFUSE_FLAGS"] == "--enable_autofuse=false" and "AUTOFUSE_DFX_FLAGS" not in original
    assert fused["AUTOFUSE_FLAGS"] == "--enable_autofuse=true" and original["PATH"] == fused["PATH"] == "/bin"
    assert fused["AUTOFUSE_DFX_FLAGS"] == f"--skip_node_names_cfg={driver.HERE}/switches/fused/autofuse_skip.ini"
    for side, env in (("original", original), ("fused", fused)):
        assert env["DUMP_GE_GRAPH"] == "2" and "FeGraphFusionAfter" in env["DUMP_GRAPH_LEVEL"]
        assert env["DUMP_GRAPH_PATH"] == f"{results}/{side}/ge_dumps"
        assert env["ASCEND_WORK_PATH"] == f"{results}/{side}/ascend_work"
        assert env["ASCEND_PROCESS_LOG_PATH"] == f"{results}/{side}/log" and env["ASCEND_GLOBAL_LOG_LEVEL"] == "1"
    assert "AUTOFUSE_DFX_FLAGS" not in driver.side_environment(_spec(skip=None), "fused", results, base=parent)
    quiet = driver.side_environment(_spec(), "fused", results, base=parent, log_level=3)
    assert quiet["ASCEND_GLOBAL_LOG_LEVEL"] == "3"


@pytest.mark.parametrize("source", [DRIVER_SOURCE, SESSION_SOURCE])
def test_the_host_scripts_parse_as_python_37_and_import_no_fuselens(source):
    tree = ast.parse(source.read_text(), feature_version=(3, 7))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 and node.module}
    assert not imported & {"fuselens", "core", "passes", "session", "cli", "gui", "tests"}


def test_npu_session_config_carries_the_switches_profiling_and_compile_stat(tmp_path):
    """The ConfigProto both sides and the NPU backend build (TensorFlow builds it without an NPU)."""
    import tensorflow as tf

    from fuselens.core.devices.npu_session import npu_session_config

    config = npu_session_config(tf, ["ScopeInstanceNormPass"], "/x/fusion_switch.json", str(tmp_path / "original"))
    [optimizer] = config.graph_options.rewrite_options.custom_optimizers
    params = optimizer.parameter_map
    assert optimizer.name == "NpuOptimizer" and params["use_off_line"].b and params["profiling_mode"].b
    assert params["enable_scope_fusion_passes"].s == b"ScopeInstanceNormPass"
    assert params["fusion_switch_file"].s == b"/x/fusion_switch.json"
    assert params["export_compile_stat"].i == 2  # fusion_result.json as soon as the graph is built
    profiling = json.loads(params["profiling_options"].s)
    assert profiling["output"] == str(tmp_path / "original") and profiling["aic_metrics"] == "PipeUtilization"
    assert config.graph_options.rewrite_options.remapping == 2  # RewriterConfig.OFF
    bare = npu_session_config(tf, [], "", str(tmp_path))
    assert "enable_scope_fusion_passes" not in bare.graph_options.rewrite_options.custom_optimizers[0].parameter_map
