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

from core.formats.samples import cache_dir, load_build_script

ROOT = Path(__file__).resolve().parents[2]
# Bump when the builder changes, so stale cache files are not reused.
ZOO_VERSION = 1


@dataclass(frozen=True)
class ZooModel:
    name: str  # the keras.applications constructor
    size: int  # input height = width: the smallest the architecture takes (Xception 71, InceptionV3 75)


ZOO = {m.name: m for m in [
    ZooModel("EfficientNetB0", 32), ZooModel("MobileNetV3Small", 32), ZooModel("InceptionV3", 75),
    ZooModel("Xception", 71), ZooModel("NASNetMobile", 32), ZooModel("ConvNeXtTiny", 32),
    ZooModel("ResNet50", 32), ZooModel("DenseNet121", 32),
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
    import keras
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    samples = load_build_script()
    size = ZOO[name].size
    seed = zlib.crc32(name.encode())
    keras.utils.set_random_seed(seed % (2**31))
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                              classifier_activation=None)
    rng = np.random.default_rng(seed)
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
    spec = tf.TensorSpec([None, size, size, 3], tf.float32, name="input")
    concrete = tf.function(lambda x: model(x, training=False), autograph=False).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen.graph.as_graph_def(add_shapes=True).SerializeToString(deterministic=True)


def main(names: list[str]) -> None:
    samples = load_build_script()
    for name in names or list(ZOO):
        data = build(name)
        samples.write_atomic(zoo_path(name), data)
        print(f"{name:18s} {len(data):>12,d} bytes  {zoo_path(name)}")


if __name__ == "__main__":
    main(sys.argv[1:])
