"""ge.es: graph building (GraphBuilder, TensorHolder); the op functions are in ge.es.math, ge.es.nn and
ge.es.all (FuseLens offers every op of its table in each)."""

from fuselens.passes.ge_python.api.builder import GraphBuilder, TensorHolder
from fuselens.passes.ge_python.api.missing import missing_names

__all__ = ["GraphBuilder", "TensorHolder"]
__getattr__ = missing_names("ge.es")
