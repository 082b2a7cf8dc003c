"""ge.es.nn: one function per op of FuseLens's op table (passes/ge_python/optable.py)."""

from fuselens.passes.ge_python.api.builder import op_functions

__getattr__ = op_functions("ge.es.nn")
