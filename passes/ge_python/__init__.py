"""GE Python fusion passes (CANN's `ge.passes`), loaded as GE loads them and run in FuseLens's pipeline.

A user's pass file is the file they deploy: it imports `ge.passes`, `ge.es`, `ge.graph`, and FuseLens
provides those (api/ge, in FuseLens's words) while it loads and runs the file (scope.py); an API it
lacks is reported by name. The public interface, kept stable for the front ends:

* `load_pass_files(paths) -> PassLoad` and `load_env_passes(environ=None) -> PassLoad`
  (ASCEND_GE_PY_PASS_PATH): `PassLoad.passes` are `RegisteredPass` records (name, stage, kind,
  source file and line), `PassLoad.errors` are `UserCodeError` records (the user's file, line,
  message and their own frames), `PassLoad.unsupported` the `ge` APIs asked for that FuseLens lacks,
  `PassLoad.ge_note()` which `ge` the passes ran against.
* In the pipeline: `PassConfig.with_py_passes(paths)` loads the files and puts their passes into that
  configuration's catalog (family "ge_python", under their registered names, switched on, at the point
  of the pipeline their stage names: docs/reference/passes.md); `config.py_pass_load` is the PassLoad.
  `run_pipeline(graph, config)` then runs them like the built-in passes: each one's PassResult is a
  `GePassResult` (matches, near misses, rewrites as every pass gives them, plus GE's `match_times` /
  `effect_times`, the user's errors of that run and the numeric proof).
* `run_py_passes(graph, paths, config=None) -> (PipelineResult, PassLoad)`: the two steps at once.
* A window never runs the user's code: a helper process loads (`PassLoad.to_json()`), the window takes
  `PassConfig.with_py_load(paths, PassLoad.from_json(data))` (the passes listed, nothing executed), and
  a pickled copy of that configuration loads the files again where it runs them.
* `proof.prove(pipeline) -> Proof`: the numeric proof (TensorFlow, original vs fused on random inputs),
  or "structure only: GEMM has no TensorFlow equivalent here".
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from fuselens.passes.ge_python.engine import GePassResult, GePythonPass
from fuselens.passes.ge_python.loader import (
    ENV_PASS_PATH,
    PassLoad,
    RegisteredPass,
    UserCodeError,
    load_env_passes,
    load_pass_files,
    pass_path_entries,
)

if TYPE_CHECKING:
    from fuselens.core.graph import Graph
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import PipelineResult

__all__ = ["ENV_PASS_PATH", "GePassResult", "GePythonPass", "PassLoad", "RegisteredPass", "UserCodeError",
           "load_env_passes", "load_pass_files", "pass_path_entries", "run_py_passes"]


def run_py_passes(graph: Graph, paths: Iterable[str | Path],
                  config: PassConfig | None = None) -> tuple[PipelineResult, PassLoad]:
    """Load pass files into `config` (default: no built-in pass but the general ones) and run the pipeline."""
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import run_pipeline

    configured = (config or PassConfig.from_ids([])).with_py_passes(paths)
    return run_pipeline(graph, configured), configured.py_pass_load
