"""ge.graph: what a pass reads of nodes and tensors, and the Graph a builder makes."""

from fuselens.passes.ge_python.api.builder import BuiltGraph as Graph
from fuselens.passes.ge_python.api.missing import missing_names
from fuselens.passes.ge_python.api.views import DataType, Format, Node, Shape, Tensor, TensorDesc

__all__ = ["DataType", "Format", "Graph", "Node", "Shape", "Tensor", "TensorDesc"]
__getattr__ = missing_names("ge.graph")
