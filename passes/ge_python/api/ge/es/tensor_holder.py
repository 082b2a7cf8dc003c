"""ge.es.tensor_holder."""

from fuselens.passes.ge_python.api.builder import TensorHolder
from fuselens.passes.ge_python.api.missing import missing_names

__all__ = ["TensorHolder"]
__getattr__ = missing_names("ge.es.tensor_holder")
