"""ge.es.graph_builder."""

from fuselens.passes.ge_python.api.builder import GraphBuilder
from fuselens.passes.ge_python.api.missing import missing_names

__all__ = ["GraphBuilder"]
__getattr__ = missing_names("ge.es.graph_builder")
