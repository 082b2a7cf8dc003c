"""ge.graph.types."""

from fuselens.passes.ge_python.api.missing import missing_names
from fuselens.passes.ge_python.api.views import DataType, Format

__all__ = ["DataType", "Format"]
__getattr__ = missing_names("ge.graph.types")
