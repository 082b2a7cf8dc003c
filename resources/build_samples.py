"""Rebuild FuseLens's sample models, byte-identically (seeded), as frozen GraphDefs.

    python resources/build_samples.py            # every committed sample -> resources/samples/
    python resources/build_samples.py NAME ...   # just these (cached ones go to the user cache)

Every weight and every BatchNorm statistic (mean, variance, gamma, beta) is random: with the
default initialisation a BatchNorm fold is the identity and would prove nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if __name__ == "__main__":  # a script of the checkout (an installed fuselens loads it as a module, path untouched)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import tensorflow as tf

from fuselens.core.formats.samples import SAMPLE_DIR, SAMPLES

v1 = tf.compat.v1


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def weight(rng: np.random.Generator, shape: tuple[int, ...], name: str, *, read: bool = True) -> tf.Tensor:
    """A random weight; with `read` it sits behind Identity like a frozen ReadVariableOp."""
    value = tf.constant(rng.normal(0.0, 0.3, size=shape).astype(np.float32), name=f"{name}/resource")
    return tf.identity(value, name=f"{name}/ReadVariableOp") if read else value


def bn_stats(rng: np.random.Generator, channels: int) -> dict[str, np.ndarray]:
    return {
        "gamma": rng.uniform(0.5, 1.5, channels).astype(np.float32),
        "beta": rng.normal(0.0, 0.5, channels).astype(np.float32),
        "mean": rng.normal(0.0, 0.5, channels).astype(np.float32),
        "variance": rng.uniform(0.5, 2.0, channels).astype(np.float32),
    }


def fused_bn(x: tf.Tensor, rng: np.random.Generator, name: str, *, training: bool = False) -> tf.Tensor:
    stats = bn_stats(rng, x.shape[-1])
    consts = {k: tf.constant(v, name=f"{name}/{k}") for k, v in stats.items()}
    y, *_ = tf.raw_ops.FusedBatchNormV3(
        x=x, scale=consts["gamma"], offset=consts["beta"], mean=consts["mean"], variance=consts["variance"],
        epsilon=1e-3, is_training=training, name=name,
    )
    return y


def conv(x: tf.Tensor, rng: np.random.Generator, out_channels: int, name: str, *, bias: bool = False) -> tf.Tensor:
    w = weight(rng, (3, 3, x.shape[-1], out_channels), f"{name}/kernel")
    y = tf.nn.conv2d(x, w, strides=1, padding="SAME", name=name)
    if bias:
        y = tf.nn.bias_add(y, weight(rng, (out_channels,), f"{name}/bias"), name=f"{name}/BiasAdd")
    return y


def small_op_bn(x: tf.Tensor, rng: np.random.Generator, name: str, *, center: bool, scale: bool) -> tf.Tensor:
    """Keras BatchNormalization(fused=False) at inference: tf.nn.batch_normalization's small ops."""
    stats = bn_stats(rng, x.shape[-1])
    with tf.name_scope(name):
        mean = tf.identity(tf.constant(stats["mean"], name="moving_mean"), name="moving_mean/ReadVariableOp")
        var = tf.identity(tf.constant(stats["variance"], name="moving_variance"),
                          name="moving_variance/ReadVariableOp")
        gamma = tf.identity(tf.constant(stats["gamma"], name="gamma"), name="gamma/ReadVariableOp") if scale else None
        beta = tf.identity(tf.constant(stats["beta"], name="beta"), name="beta/ReadVariableOp") if center else None
        return tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3, name="batchnorm")


def layer_norm(x: tf.Tensor, rng: np.random.Generator, scope: str, sub_scope: str, axes: list[int]) -> tf.Tensor:
    """TF1 contrib layer_norm / instance_norm structure: SCOPE/moments + SCOPE/<sub_scope>."""
    channels = x.shape[-1]
    with tf.name_scope(scope):
        gamma = tf.identity(tf.constant(rng.uniform(0.5, 1.5, channels).astype(np.float32), name="gamma"),
                            name="gamma/read")
        beta = tf.identity(tf.constant(rng.normal(0, 0.5, channels).astype(np.float32), name="beta"),
                           name="beta/read")
        mean, variance = v1.nn.moments(x, axes, keep_dims=True, name="moments")
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12, name=sub_scope)


def placeholder(shape: list[int | None], name: str, dtype: tf.DType = tf.float32) -> tf.Tensor:
    return v1.placeholder(dtype, shape, name=name)


# ---- the samples ------------------------------------------------------------------------------

def build_abs_relu_exp(rng: np.random.Generator) -> None:
    x = placeholder([128, 192], "data1", tf.float16)
    tf.exp(tf.nn.relu(tf.abs(x, name="abs_0"), name="relu_0"), name="exp_0")


def build_abs_add_relu(rng: np.random.Generator) -> None:
    x = placeholder([128, 192], "data1", tf.float16)
    y = placeholder([1, 192], "data2", tf.float16)
    tf.nn.relu(tf.add(tf.abs(x, name="abs_0"), y, name="add_0"), name="relu_0")


def build_abs_reduce_sum(rng: np.random.Generator) -> None:
    x = placeholder([128, 192], "data1", tf.float16)
    tf.reduce_sum(tf.abs(x, name="abs_0"), axis=1, name="reduce_sum_0")


def build_conv_bn(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    tf.nn.relu(fused_bn(conv(x, rng, 16, "conv1"), rng, "bn1"), name="relu1")


def build_conv_bias_bn(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    tf.identity(fused_bn(conv(x, rng, 16, "conv1", bias=True), rng, "bn1"), name="output")


def build_depthwise_bn(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    w = weight(rng, (3, 3, 8, 2), "dw1/depthwise_kernel")
    y = tf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", name="dw1")
    tf.identity(fused_bn(y, rng, "bn1"), name="output")


def build_conv_bias_mul(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    y = conv(x, rng, 16, "conv1", bias=True)
    tf.multiply(y, tf.constant(np.float32(0.75), name="mul/y"), name="mul")


def build_matmul_mul(rng: np.random.Generator) -> None:
    x = placeholder([4, 32], "input")
    y = tf.matmul(x, weight(rng, (32, 16), "dense/kernel"), name="dense/MatMul")
    y = tf.nn.bias_add(y, weight(rng, (16,), "dense/bias"), name="dense/BiasAdd")
    tf.multiply(y, tf.constant(np.float32(1.5), name="mul/y"), name="mul")


def build_matmul_add_chain(rng: np.random.Generator) -> None:
    """Two dense layers (MatMul + BiasAdd, MatMul + Add) and an Add of a bare zero: what a GE Python pass's
    templates (resources/ge_passes/) match."""
    x = placeholder([4, 8], "input")
    y = tf.matmul(x, weight(rng, (8, 16), "dense1/kernel"), name="dense1/MatMul")
    y = tf.nn.bias_add(y, weight(rng, (16,), "dense1/bias"), name="dense1/BiasAdd")
    y = tf.nn.relu(y, name="dense1/Relu")
    y = tf.matmul(y, weight(rng, (16, 16), "dense2/kernel"), name="dense2/MatMul")
    y = tf.raw_ops.Add(x=y, y=weight(rng, (16,), "dense2/bias", read=False), name="dense2/Add")
    tf.raw_ops.Add(x=y, y=tf.constant(np.float32(0.0), name="add_zero/y"), name="add_zero")


def build_group_conv_bn(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 16], "input")
    parts = tf.split(x, 4, axis=3, name="group_conv/split")
    outs = [
        tf.nn.conv2d(p, weight(rng, (3, 3, 4, 8), f"group_conv/kernel_{i}"), 1, "SAME", name=f"group_conv/conv_{i}")
        for i, p in enumerate(parts)
    ]
    y = tf.concat(outs, axis=3, name="group_conv/concat")
    tf.identity(fused_bn(y, rng, "bn1"), name="output")


def build_keras_bn_small_ops(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    for name, center, scale in [("bn_default", True, True), ("bn_no_center", False, True),
                                ("bn_no_scale", True, False), ("bn_plain", False, False)]:
        y = conv(x, rng, 8, f"{name}_conv", bias=name == "bn_no_scale")
        tf.nn.relu(small_op_bn(y, rng, name, center=center, scale=scale), name=f"{name}_relu")


def build_bert_layernorm(rng: np.random.Generator) -> None:
    hidden = 32
    x = placeholder([2, 8, hidden], "input_ids_embedding")
    with tf.name_scope("bert/encoder/layer_0/attention/output"):
        h = layer_norm(x, rng, "LayerNorm", "batchnorm", [-1])
    flat = tf.reshape(h, [-1, hidden], name="bert/encoder/layer_0/output/Reshape")
    dense = tf.matmul(flat, weight(rng, (hidden, hidden), "bert/encoder/layer_0/output/dense/kernel"),
                      name="bert/encoder/layer_0/output/dense/MatMul")
    dense = tf.tanh(tf.reshape(dense, [2, 8, hidden], name="bert/encoder/layer_0/output/Reshape_1"),
                    name="bert/encoder/layer_0/output/Tanh")
    with tf.name_scope("bert/encoder/layer_0/output"):
        out = layer_norm(dense + h, rng, "LayerNorm", "batchnorm", [-1])
    tf.identity(out, name="sequence_output")


def build_instance_norm(rng: np.random.Generator) -> None:
    x = placeholder([1, 8, 8, 16], "input")
    y = layer_norm(x, rng, "InstanceNorm", "instancenorm", [1, 2])
    y = tf.nn.relu(y, name="relu")
    y = layer_norm(conv(y, rng, 16, "conv1"), rng, "InstanceNorm_1", "instancenorm", [1, 2])
    tf.identity(y, name="output")


def _center_and_size(boxes: tf.Tensor) -> tuple[tf.Tensor, ...]:
    with tf.name_scope("get_center_coordinates_and_sizes"):
        ymin, xmin, ymax, xmax = tf.unstack(tf.transpose(boxes))
        width = xmax - xmin
        height = ymax - ymin
        return ymin + height / 2.0, xmin + width / 2.0, height, width


def build_ssd_decode(rng: np.random.Generator) -> None:
    """The object-detection API's FasterRcnnBoxCoder._decode under a `Decode` scope."""
    codes = placeholder([64, 4], "box_encodings")
    anchors = placeholder([64, 4], "anchors")
    with tf.name_scope("Postprocessor/Decode"):
        ycenter_a, xcenter_a, ha, wa = _center_and_size(anchors)
        ty, tx, th, tw = tf.unstack(tf.transpose(codes))
        ty /= 10.0
        tx /= 10.0
        th /= 5.0
        tw /= 5.0
        w = tf.exp(tw) * wa
        h = tf.exp(th) * ha
        ycenter = ty * ha + ycenter_a
        xcenter = tx * wa + xcenter_a
        ymin = ycenter - h / 2.0
        xmin = xcenter - w / 2.0
        ymax = ycenter + h / 2.0
        xmax = xcenter + w / 2.0
        boxes = tf.transpose(tf.stack([ymin, xmin, ymax, xmax]))
    tf.identity(boxes, name="detection_boxes")


def build_clip_boxes(rng: np.random.Generator) -> None:
    """tensorpack Faster R-CNN clip_boxes: boxes clipped to [0, (w, h, w, h)] of the image shape."""
    boxes = placeholder([64, 4], "boxes")
    image_shape = placeholder([2], "image_shape", tf.int32)
    with tf.name_scope("fastrcnn/clip_boxes"):
        boxes = tf.maximum(boxes, 0.0)
        window = tf.tile(tf.reverse(image_shape, [0]), [2])
        boxes = tf.minimum(boxes, tf.cast(window, tf.float32), name="fastrcnn_all_boxes")
    tf.identity(boxes, name="output")


def build_conv_bn_training(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    tf.identity(fused_bn(conv(x, rng, 16, "conv1"), rng, "bn1", training=True), name="output")


def build_conv_shared(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    y = conv(x, rng, 16, "conv1")
    tf.identity(fused_bn(y, rng, "bn1"), name="output")
    tf.nn.relu(y, name="side_relu")


def build_mul_vector(rng: np.random.Generator) -> None:
    x = placeholder([1, 16, 16, 8], "input")
    y = conv(x, rng, 16, "conv1", bias=True)
    tf.multiply(y, tf.constant(rng.uniform(0.5, 1.5, 16).astype(np.float32), name="mul/y"), name="mul")


def build_demo(rng: np.random.Generator) -> None:
    x = placeholder([1, 32, 32, 3], "image")
    y = tf.nn.relu6(fused_bn(conv(x, rng, 16, "stem/conv"), rng, "stem/bn"), name="stem/relu6")
    w = weight(rng, (3, 3, 16, 1), "block1/depthwise/depthwise_kernel")
    y = tf.nn.depthwise_conv2d(y, w, [1, 2, 2, 1], "SAME", name="block1/depthwise")
    y = tf.nn.relu(fused_bn(y, rng, "block1/bn"), name="block1/relu")
    y = tf.reshape(y, [1, 256, 16], name="tokens/Reshape")
    with tf.name_scope("encoder"):
        y = layer_norm(y, rng, "LayerNorm", "batchnorm", [-1])
    y = tf.reduce_mean(y, axis=1, name="head/pool")
    logits = tf.matmul(y, weight(rng, (16, 10), "head/dense/kernel"), name="head/dense/MatMul")
    logits = tf.multiply(logits, tf.constant(np.float32(0.5), name="head/scale/y"), name="head/scale")
    gated = tf.sigmoid(tf.abs(logits, name="head/abs"), name="head/sigmoid")
    tf.exp(tf.nn.relu(gated - 0.5, name="head/relu"), name="head/exp")


# ---- Keras applications (cached, built on first use) -----------------------------------------

KERAS_APPS = {"mobilenet_v2": "MobileNetV2", "resnet50": "ResNet50", "densenet121": "DenseNet121"}


def build_keras_app(name: str) -> bytes:
    """A Keras application with random weights and BN statistics, frozen through a concrete function."""
    import keras
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    keras.utils.set_random_seed(zlib.crc32(name.encode()) % (2**31))
    model = getattr(keras.applications, KERAS_APPS[name])(weights=None, input_shape=(224, 224, 3))
    rng = rng_for(name)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            stats = bn_stats(rng, layer.moving_mean.shape[0])
            layer.gamma.assign(stats["gamma"])
            layer.beta.assign(stats["beta"])
            layer.moving_mean.assign(stats["mean"])
            layer.moving_variance.assign(stats["variance"])
    spec = tf.TensorSpec([None, 224, 224, 3], tf.float32, name="input")
    concrete = tf.function(lambda x: model(x, training=False), autograph=False).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen.graph.as_graph_def(add_shapes=True).SerializeToString(deterministic=True)


def build(name: str) -> bytes:
    """The serialized GraphDef of one sample."""
    if name in KERAS_APPS:
        return build_keras_app(name)
    if name not in SAMPLES:
        raise SystemExit(f"unknown sample {name!r}; known: {', '.join(SAMPLES)}")
    graph = tf.Graph()
    with graph.as_default():
        globals()[f"build_{name}"](rng_for(name))
    return graph.as_graph_def(add_shapes=True).SerializeToString(deterministic=True)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv: list[str]) -> None:
    names = argv or [n for n, s in SAMPLES.items() if not s.cached]
    for name in names:
        sample = SAMPLES.get(name)
        if sample is not None and sample.cached:
            from fuselens.core.formats.samples import sample_path

            path = sample_path(name, build=False)
        else:
            path = SAMPLE_DIR / f"{name}.pb"
        data = build(name)
        write_atomic(path, data)
        print(f"{name:20s} {len(data):>10,d} bytes  {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
