"""Ascend NPU session set-up, self-contained: the runner's NPU backend imports it and
`fuselens export-npu-script` copies this file into the bundle, next to its driver, so a run on an
Ascend host and a run through FuseLens configure the session the same way.

Keep it free of FuseLens imports and of syntax newer than Python 3.7 (TF 1.15 hosts).
"""

import glob
import json
import os
import subprocess

# The profiling options of the CANN AutoFuse reference examples; "output" is set per run.
PROFILING_OPTIONS = {"output": "./profiling", "training_trace": "on", "task_time": "on", "hccl": "on",
                     "aicpu": "on", "aic_metrics": "PipeUtilization", "msproftx": "off"}


def import_npu(mode):
    """Load the TF adapter: npu_bridge (TF 1.15, mode "tf1") or npu_device (TF 2.6.5, "tf2-compat")."""
    if mode == "tf1":
        import npu_bridge.npu_init  # noqa: F401  (registers NpuOptimizer and the NPU ops)
        return "npu_bridge"
    import npu_device
    npu_device.compat.enable_v1()
    return "npu_device"


def set_autofuse_flags(flags):
    """AUTOFUSE_FLAGS is read by the graph engine when it starts: set it before the first session."""
    os.environ["AUTOFUSE_FLAGS"] = flags


def npu_session_config(tf, scope_passes, fusion_switch_file, profiling_dir, export_compile_stat=2):
    """A ConfigProto that runs the graph through NpuOptimizer with the chosen switches and profiling on.
    `export_compile_stat` 2 has FE write fusion_result.json as soon as the graph is built (1: at a normal
    exit, 0: never), into $ASCEND_WORK_PATH/FE/<pid>/ or the working directory."""
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    if scope_passes:
        custom_op.parameter_map["enable_scope_fusion_passes"].s = tf.compat.as_bytes(",".join(scope_passes))
    if fusion_switch_file:
        custom_op.parameter_map["fusion_switch_file"].s = tf.compat.as_bytes(fusion_switch_file)
    custom_op.parameter_map["export_compile_stat"].i = export_compile_stat
    options = dict(PROFILING_OPTIONS, output=os.path.abspath(profiling_dir))
    custom_op.parameter_map["profiling_mode"].b = True
    custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes(json.dumps(options))
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
    return config


def msprof_export(profiling_dir, msprof="msprof"):
    """Run `msprof --export=on` on every PROF_* folder the run wrote; return those folders."""
    folders = sorted(glob.glob(os.path.join(profiling_dir, "**", "PROF_*"), recursive=True))
    if not folders:
        raise RuntimeError(f"no PROF_* folder under {profiling_dir}: profiling wrote nothing")
    for folder in folders:
        subprocess.run([msprof, "--export=on", "--output=" + folder], check=True)
    return folders
