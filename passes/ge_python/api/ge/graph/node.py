"""ge.graph.node."""

from fuselens.passes.ge_python.api.missing import missing_names
from fuselens.passes.ge_python.api.views import Node

__all__ = ["Node"]
__getattr__ = missing_names("ge.graph.node")
