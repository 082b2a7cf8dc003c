"""Built-in sample models: one table drives the CLI, the GUI gallery, the tests and the build script.

Small samples are committed as `resources/samples/NAME.pb` and rebuilt byte-identically by
`resources/build_samples.py`. Large ones (Keras applications) are built on first use into the
user cache folder, since a frozen ResNet50 is ~100 MB.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from fuselens.core.errors import FuseLensError
from fuselens.core.package_data import resource

SAMPLE_DIR = resource("samples")
# Bump when a cached builder changes, so stale cache files are not reused.
CACHE_VERSION = 1


@dataclass(frozen=True)
class Sample:
    name: str
    description: str
    families: tuple[str, ...]
    cached: bool = False


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in [
        Sample("demo", "Conv+BN, depthwise+BN, a TF1 LayerNorm scope and an elementwise tail: all three "
               "pass families in one small graph", ("amct", "scope", "autofuse")),
        Sample("abs_relu_exp", "AutoFuse reference af_tf_eleandele: data1 float16 [128,192] -> abs -> relu -> exp",
               ("autofuse",)),
        Sample("abs_add_relu", "AutoFuse reference af_tf_eleandbroadcast: abs -> add (broadcast [1,192]) -> relu",
               ("autofuse",)),
        Sample("abs_reduce_sum", "AutoFuse reference af_tf_eleandreduce: abs -> reduce_sum over the last axis",
               ("autofuse",)),
        Sample("conv_bn", "Conv2D + FusedBatchNormV3 (inference) + Relu", ("amct",)),
        Sample("conv_bias_bn", "Conv2D + BiasAdd + FusedBatchNormV3 (inference)", ("amct",)),
        Sample("depthwise_bn", "DepthwiseConv2dNative (channel multiplier 2) + FusedBatchNormV3", ("amct",)),
        Sample("conv_bias_mul", "Conv2D + BiasAdd + Mul by a scalar Const", ("amct",)),
        Sample("matmul_mul", "MatMul + BiasAdd + Mul by a scalar Const", ("amct",)),
        Sample("matmul_add_chain", "MatMul + BiasAdd, MatMul + Add and an Add of a zero Const: the GE Python "
               "pass templates' patterns (MatMul + Add -> GEMM, Add(x, 0) -> x)", ("ge_python",)),
        Sample("group_conv_bn", "Group conv: Split + 4 x Conv2D + ConcatV2 on channels + FusedBatchNormV3",
               ("amct",)),
        Sample("keras_bn_small_ops", "Conv2D + Keras BatchNormalization as small ops, in the four variants "
               "(default, center=False, scale=False, both False)", ("amct",)),
        Sample("bert_layernorm", "Two TF1/BERT-style LayerNorm scopes (LayerNorm/moments + LayerNorm/batchnorm)",
               ("scope",)),
        Sample("instance_norm", "TF1-style InstanceNorm scopes (InstanceNorm/moments + InstanceNorm/instancenorm)",
               ("scope",)),
        Sample("ssd_decode", "SSD box decoding: a `Decode` scope as the object-detection API writes it",
               ("scope",)),
        Sample("clip_boxes", "Faster R-CNN `clip_boxes` scope: Maximum, ReverseV2 + Tile of the image shape, Minimum",
               ("scope",)),
        Sample("conv_bn_training", "Near miss: Conv2D + FusedBatchNormV3 with is_training=true", ("amct",)),
        Sample("conv_shared", "Near miss: Conv2D output read by the BatchNorm and by a Relu", ("amct",)),
        Sample("mul_vector", "Near miss: Conv2D + BiasAdd + Mul by a per-channel vector, not a scalar", ("amct",)),
        Sample("mobilenet_v2", "Keras MobileNetV2 (weights=None, random weights and BN statistics), frozen; "
               "52 small-op BatchNorms", ("amct", "autofuse"), cached=True),
        Sample("resnet50", "Keras ResNet50 (random weights and BN statistics), frozen; ~100 MB", ("amct",),
               cached=True),
        Sample("densenet121", "Keras DenseNet121 (random weights and BN statistics), frozen", ("amct",),
               cached=True),
    ]
}


def cache_dir() -> Path:
    root = os.environ.get("FUSELENS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselens"
    )
    return Path(root)


def get_sample(name: str) -> Sample:
    if name not in SAMPLES:
        raise FuseLensError(f"{name}: no built-in sample of that name (samples: {', '.join(SAMPLES)})")
    return SAMPLES[name]


def sample_path(name: str, *, build: bool = True) -> Path:
    """Where the sample's .pb lives; a cached sample is built there first if missing."""
    sample = get_sample(name)
    if not sample.cached:
        return SAMPLE_DIR / f"{name}.pb"
    path = cache_dir() / f"{name}-v{CACHE_VERSION}.pb"
    if build and not path.exists():
        builder = load_build_script()
        builder.write_atomic(path, builder.build(name))
    return path


def is_built(name: str) -> bool:
    return sample_path(name, build=False).exists()


def load_build_script() -> ModuleType:
    """`resources/build_samples.py` as a module (it imports TensorFlow, so only on demand)."""
    spec = importlib.util.spec_from_file_location("fuselens_build_samples", resource("build_samples.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
