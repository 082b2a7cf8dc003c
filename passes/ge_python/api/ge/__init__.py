"""FuseLens's `ge`: the subset of CANN's Python `ge` package that fusion passes use (ge.passes, ge.es,
ge.graph), importable as `ge` only while FuseLens loads and runs pass files (passes/ge_python/scope.py)."""

from fuselens.passes.ge_python.api.missing import missing_names

__getattr__ = missing_names("ge")
