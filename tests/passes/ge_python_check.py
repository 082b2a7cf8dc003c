"""Shared by the GE Python pass tests: the templates, writing a pass file, running pass files on a sample."""

from __future__ import annotations

import textwrap
from pathlib import Path

from fuselens.core.package_data import resource
from fuselens.passes.config import PassConfig
from fuselens.passes.ge_python.engine import GePassResult
from fuselens.passes.pipeline import PipelineResult, run_pipeline

TEMPLATES = resource("ge_passes")
GEMM_EXPRESSION = TEMPLATES / "matmul_add_gemm.py"
GEMM_BUILDER = TEMPLATES / "matmul_add_gemm_builder.py"
ADD_ZERO_EXPRESSION = TEMPLATES / "add_zero.py"
ADD_ZERO_BUILDER = TEMPLATES / "add_zero_builder.py"
SAMPLE = "matmul_add_chain"


def write_pass(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


def run_files(graph, *paths) -> tuple[PipelineResult, PassConfig]:
    """The pass files alone (built-in passes off; the general ones run, as always) on `graph`."""
    config = PassConfig.from_ids([]).with_py_passes(paths)
    assert config.py_pass_load.errors == []
    return run_pipeline(graph, config), config


def ge_result(pipeline: PipelineResult, name: str) -> GePassResult:
    result = pipeline.result(name)
    assert isinstance(result, GePassResult), f"{name} did not run: {[r.pass_id for r in pipeline.results]}"
    return result
