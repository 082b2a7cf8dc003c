"""The Keras application zoo of the tests: frozen, random weights and BatchNorm statistics, logits out.

    python -m tests.zoo.models [NAME ...]    # build (or rebuild) into the cache and print sizes

Each model is built once, in a child process (Keras and a model's variables stay out of the
test process), and cached in the sample cache folder next to `mobilenet_v2`. Default Keras
initialisation leaves biases at 0, BatchNorm at the identity (gamma 1, beta 0, mean 0, variance
1) and ConvNeXt's layer scale at 1e-6: a fold or a fused kernel that got those wrong would still
agree. So every variable a constant initialiser filled gets random values, every BatchNorm
random statistics, and the head gives logits (`classifier_activation=None`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuselens.core.formats.samples import cache_dir, load_build_script

ROOT = Path(__file__).resolve().parents[2]
# Bump when the builder changes, so stale cache files are not reused.
ZOO_VERSION = 1


@dataclass(frozen=True)
class ZooModel:
    name: str  # the keras.applications constructor, or BERT_NAME
    size: int  # input height = width: the smallest the architecture takes (Xception 71, InceptionV3 75);
    # for the BERT, the sequence length


# A BERT encoder built from tf-keras (Keras 2) layers, frozen from TF 2: its LayerNormalization writes
# the moments/batchnorm structure of TF1 BERT, with epsilon 1e-12 and gamma / beta read through Identity.
BERT_NAME = "TFKerasBERT"
BERT_SHAPE = {"hidden": 256, "heads": 4, "layers": 2, "vocab": 512}  # BERT-mini's width, two layers

ZOO = {m.name: m for m in [
    ZooModel("EfficientNetB0", 32), ZooModel("MobileNetV3Small", 32), ZooModel("InceptionV3", 75),
    ZooModel("Xception", 71), ZooModel("NASNetMobile", 32), ZooModel("ConvNeXtTiny", 32),
    ZooModel("ResNet50", 32), ZooModel("DenseNet121", 32), ZooModel(BERT_NAME, 128),
]}


def zoo_path(name: str) -> Path:
    return cache_dir() / f"zoo-{name}-{ZOO[name].size}-v{ZOO_VERSION}.pb"


def zoo_model(name: str) -> Path:
    """The cached frozen .pb of a zoo model, built in a child process on first use."""
    path = zoo_path(name)
    if not path.exists():
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
        done = subprocess.run([sys.executable, "-m", "tests.zoo.models", name], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not path.exists():
            raise RuntimeError(f"building {name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return path


def build(name: str) -> bytes:
    """The serialized frozen GraphDef of a zoo model (imports TensorFlow and Keras)."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    size = ZOO[name].size
    seed = zlib.crc32(name.encode())
    rng = np.random.default_rng(seed)
    if name == BERT_NAME:
        model, spec = bert_encoder(size, seed, rng), tf.TensorSpec([None, size], tf.int32, name="input_ids")
    else:
        model, spec = keras_application(name, size, seed, rng), tf.TensorSpec([None, size, size, 3], tf.float32,
                                                                              name="input")
    concrete = tf.function(lambda x: model(x, training=False), autograph=False).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen.graph.as_graph_def(add_shapes=True).SerializeToString(deterministic=True)


def keras_application(name: str, size: int, seed: int, rng: Any) -> Any:
    """A keras.applications model with every constant-initialised variable and BatchNorm made random."""
    import keras
    import numpy as np

    samples = load_build_script()
    keras.utils.set_random_seed(seed % (2**31))
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                              classifier_activation=None)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            stats = samples.bn_stats(rng, layer.moving_mean.shape[0])
            for variable, key in [(layer.gamma, "gamma"), (layer.beta, "beta"), (layer.moving_mean, "mean"),
                                  (layer.moving_variance, "variance")]:
                if variable is not None:
                    variable.assign(stats[key])
            continue
        for variable in layer.weights:
            value = np.asarray(variable.numpy())
            if value.dtype.kind != "f" or value.size == 0 or np.ptp(value) > 0:
                continue  # not float, or already random
            if np.all(value == 0):  # biases, betas, a Normalization mean
                variable.assign(rng.normal(0.0, 0.1, value.shape).astype(value.dtype))
            else:  # gammas, layer scale, a Normalization variance
                variable.assign(rng.uniform(0.5, 1.5, value.shape).astype(value.dtype))
    return model


def bert_encoder(length: int, seed: int, rng: Any) -> Any:
    """A BERT encoder of tf-keras layers (BERT_SHAPE): token and position embeddings, then per layer
    self-attention, a residual LayerNorm, a GELU feed-forward and another. Weights are random with
    BERT's initializer scale (0.02) and biases, LayerNorm gammas and betas random too; the
    embeddings get scale 1, so the first LayerNorm sees values of BERT's own size."""
    import os

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import numpy as np
    import tensorflow as tf
    import tf_keras

    tf_keras.utils.set_random_seed(seed % (2**31))
    layers, hidden, heads = tf_keras.layers, BERT_SHAPE["hidden"], BERT_SHAPE["heads"]
    ids = tf_keras.Input((length,), dtype="int32", name="input_ids")
    x = layers.Embedding(BERT_SHAPE["vocab"], hidden, name="word_embeddings")(ids)
    x = x + layers.Embedding(length, hidden, name="position_embeddings")(tf.range(length)[None])
    x = layers.LayerNormalization(epsilon=1e-12, name="embeddings/LayerNorm")(x)
    for i in range(BERT_SHAPE["layers"]):
        attention = layers.MultiHeadAttention(heads, hidden // heads, name=f"layer_{i}/attention")(x, x)
        x = layers.LayerNormalization(epsilon=1e-12, name=f"layer_{i}/attention/LayerNorm")(x + attention)
        inner = layers.Dense(hidden * 4, activation="gelu", name=f"layer_{i}/intermediate")(x)
        x = layers.LayerNormalization(epsilon=1e-12, name=f"layer_{i}/output/LayerNorm")(
            x + layers.Dense(hidden, name=f"layer_{i}/output")(inner))
    model = tf_keras.Model(ids, x)
    for variable in model.weights:
        shape, dtype = variable.shape, variable.dtype.as_numpy_dtype
        if "embeddings" in variable.name and "LayerNorm" not in variable.name:
            value = rng.normal(0.0, 1.0, shape)
        elif "gamma" in variable.name:
            value = rng.uniform(0.5, 1.5, shape)
        elif "beta" in variable.name or "bias" in variable.name:
            value = rng.normal(0.0, 0.1, shape)
        else:
            value = rng.normal(0.0, 0.02, shape)
        variable.assign(np.asarray(value, dtype))
    return model


def main(names: list[str]) -> None:
    samples = load_build_script()
    for name in names or list(ZOO):
        data = build(name)
        samples.write_atomic(zoo_path(name), data)
        print(f"{name:18s} {len(data):>12,d} bytes  {zoo_path(name)}")


if __name__ == "__main__":
    main(sys.argv[1:])
