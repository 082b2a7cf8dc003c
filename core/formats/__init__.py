"""Models in and out: loaders (.pb, SavedModel, Keras, GE dumps through core.ascend), the samples, the
fusion switch file, atomic file writes, and what TensorFlow itself is asked in-process (shape inference,
random feeds and one in-process run: `tfshapes`, `execute`)."""
