"""Where a run executes: TensorFlow CPU (always), TensorFlow GPU (when TF sees one), Ascend NPU
(when npu_bridge or npu_device imports). Detection says why a backend is unavailable.

Detection imports TensorFlow (and the NPU adapter), so the runner's child does it; a caller that
wants the list up front (the GUI's backend menu) can call `detect_backends()` off its main thread.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.tfimport import import_tensorflow

BACKENDS = ("cpu", "gpu", "npu")


@dataclass(frozen=True)
class BackendStatus:
    name: str
    available: bool
    reason: str  # why not, or what provides it

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "available": self.available, "reason": self.reason}


def detect(name: str) -> BackendStatus:
    if name == "cpu":
        return BackendStatus("cpu", True, "TensorFlow on the host")
    if name == "gpu":
        tf = import_tensorflow()

        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            return BackendStatus("gpu", False, "TensorFlow sees no GPU")
        return BackendStatus("gpu", True, f"TensorFlow sees {len(gpus)} GPU(s)")
    if name == "npu":
        return _detect_npu()
    raise FuseLensError(f"unknown backend {name!r} (backends: {', '.join(BACKENDS)})")


def detect_backends() -> list[BackendStatus]:
    return [detect(name) for name in BACKENDS]


def npu_mode() -> str | None:
    """"tf1" when npu_bridge imports, "tf2-compat" when npu_device does, else None."""
    return _detect_npu_module()[0]


NPU_BUNDLE_HINT = ("the Ascend TF adapters exist only for TensorFlow 1.15 (npu_bridge) and 2.6.5 (npu_device), "
                   "and FuseLens runs on TensorFlow 2.21; write a bundle for the Ascend host with "
                   "`fuselens export-npu-script MODEL --mode tf1|tf2-compat -o BUNDLE/` (Run > Export NPU run script "
                   "in the window) and import what it brings back with `fuselens import-profile`")


def _detect_npu() -> BackendStatus:
    mode, why = _detect_npu_module()
    if mode is None:
        return BackendStatus("npu", False, f"{why}: {NPU_BUNDLE_HINT}")
    return BackendStatus("npu", True, f"{why} imports")


def _detect_npu_module() -> tuple[str | None, str]:
    failures = []
    for module, mode in (("npu_bridge", "tf1"), ("npu_device", "tf2-compat")):
        try:
            importlib.import_module(module)
        except Exception as e:  # an adapter for another TF version raises more than ImportError
            failures.append(f"{module} not importable ({type(e).__name__}: {str(e)[:80]})")
            continue
        return mode, module
    return None, "; ".join(failures)


def require(name: str) -> BackendStatus:
    status = detect(name)
    if not status.available:
        raise FuseLensError(f"backend {name} is not available here: {status.reason}")
    return status


def onednn_fuses_layer_norms() -> bool:
    """Whether this TensorFlow's remapper builds `_MklLayerNorm` on CPU (oneDNN on, the op registered)."""
    from tensorflow.python.framework import op_def_registry
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled()) and op_def_registry.get("_MklLayerNorm") is not None


def session_config(name: str, *, grappler: bool = True) -> Any:
    """ConfigProto for the cpu and gpu backends (the npu one comes from npu_session)."""
    tf = import_tensorflow()

    config = tf.compat.v1.ConfigProto(device_count={"GPU": 0} if name == "cpu" else {})
    if name == "gpu":
        config.gpu_options.allow_growth = True
    if not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config
