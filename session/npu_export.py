"""The NPU bundle of a fused model: the one call the command line and the window's TensorFlow helper make.

The baseline is the original graph under switches that close every toolchain fusion FuseLens
models; the fused side is the original graph with FuseLens's AMCT passes alone (AMCT's work is
offline; scope fusion and AutoFuse are left to the toolchain, switched by their own names). The
forms and the limits come from passes/toolchain.py, the files from core/ascend/npu_bundle.py.
Writing needs TensorFlow (graphs are stripped for the host's version), so the window never calls
this in its own process.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence

from fuselens.core.ascend.npu_bundle import BundleReport, BundleSide, write_npu_bundle
from fuselens.passes.autofuse.flags import AutofuseFlags
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult, run_pipeline
from fuselens.passes.toolchain import baseline_forms, fused_forms, limits, switch_of

RESULTS = "{results}"


def export_npu_bundle(folder: str | os.PathLike[str], pipeline: PipelineResult, *, model: str, mode: str,
                      input_shapes: Mapping[str, Sequence[int]] | None = None, steps: int = 100, warmup: int = 10,
                      protect: str | None = None) -> BundleReport:
    """Write the bundle of `pipeline` (the model as FuseLens fused it, under its configuration) to `folder`."""
    config = pipeline.config
    amct = run_pipeline(pipeline.original, config, families=("amct",), explain=False)
    provenance = amct.provenance.original_to_final() if amct.provenance else None
    rows = [(cls.id, "on" if config.is_enabled(cls.id) else "off", switch_of(cls).describe())
            for cls in config.catalog()]
    return write_npu_bundle(
        folder, model=model, mode=mode, original=BundleSide(pipeline.original, baseline_forms(config)),
        fused=BundleSide(amct.fused, fused_forms(pipeline)), import_command=import_command(model, config),
        limits=limits(pipeline), passes=rows, original_to_final=provenance, input_shapes=input_shapes,
        steps=steps, warmup=warmup, protect=protect)


def import_command(model: str, config: PassConfig, results: str = RESULTS) -> str:
    """`fuselens import-profile RESULTS --model MODEL` plus the pass selection that rebuilds `config`, so the
    prediction set against the NPU's records is the one the bundle was written from."""
    default = PassConfig.default()
    for path in config.scope_rule_files:
        default = default.with_scope_rules(path)
    words = ["fuselens", "import-profile", results, "--model", model]
    words += [f"--scope-rules={path}" for path in config.scope_rule_files]
    if config.autofuse != AutofuseFlags():  # switches AutoFuse on; --disable below switches it off again
        words.append(f"--autofuse-flags={config.autofuse.to_string()}")
        default = default.with_autofuse_flags(config.autofuse.to_string())
    switchable = [c.id for c in config.catalog() if not c.general]
    enable = [p for p in switchable if config.is_enabled(p) and not default.is_enabled(p)]
    disable = [p for p in switchable if default.is_enabled(p) and not config.is_enabled(p)]
    words += [f"--enable={','.join(enable)}"] if enable else []
    words += [f"--disable={','.join(disable)}"] if disable else []
    words += [f"--skip-match={match}" for match in sorted(config.skipped_matches)]
    return " ".join(word if word == results else shlex.quote(word) for word in words)
