"""ge.graph.tensor_desc."""

from fuselens.passes.ge_python.api.missing import missing_names
from fuselens.passes.ge_python.api.views import Shape, TensorDesc

__all__ = ["Shape", "TensorDesc"]
__getattr__ = missing_names("ge.graph.tensor_desc")
