"""Predicted vs actual as the window's table (session/npu_check.py's rows), and AMCT's folds on an NPU bundle's
fused side: AMCT folded them before GE, so FE having nothing left to fold is agreement, not a disagreement."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.runtime.profile_import import import_run_file
from core.runtime.remote import missing_results
from passes.registry import run_pipeline
from session.npu_check import AGREED, DIFFERENT, EXTRA, MISSING, check_imported, check_rows
from tests.npu_artifacts import GE_ONLY_PASS, write_npu_run


@pytest.fixture(scope="module")
def conv_bn(load_sample):
    return run_pipeline(load_sample("conv_bn"))


def report_of(pipeline, path):
    result = import_run_file(path, pipeline.original, pipeline.fused)
    return check_imported(pipeline, path, result, model="conv_bn")


def ledger_row(report, name="ConvBatchnormFusionPass"):
    return next(r for r in report["ledger"] if r["pass"] == name)


def write_bundle_results(root, pipeline, fe_ledger):
    """results/ laid out as a bundle's driver brings it back (complete); the original side is the model unfused, the
    fused side is AMCT's folded graph, so FE's ledger there is `fe_ledger`."""
    for side, fuses, ledger in (("original", False, {GE_ONLY_PASS: (2, 2)}), ("fused", True, fe_ledger)):
        folder = write_npu_run(root / side, pipeline, toolchain_fuses=fuses, ledger=ledger)
        (folder / "dumps").rename(folder / "ge_dumps")
        (folder / "profiling").mkdir()
        for prof in folder.glob("PROF_*"):
            prof.rename(folder / "profiling" / prof.name)
        (folder / "run.json").write_text(json.dumps({"side": side, "steps": 3}))
        np.savez(folder / "outputs.npz", **{"0": np.zeros(2)})
    assert missing_results(root) == []
    return root


def test_amct_folds_on_a_bundles_fused_side_are_done_by_amct_before_ge(tmp_path, conv_bn):
    results = write_bundle_results(tmp_path / "results", conv_bn, {GE_ONLY_PASS: (2, 2)})  # FE folded nothing
    report = report_of(conv_bn, results)
    row = ledger_row(report)
    assert row["status"] == "agree" and row["note"].startswith("done by AMCT before GE: its 1 fold(s)")
    assert report["summary"]["ledger_disagreements"] == 0
    [table_row] = [r for r in check_rows(report) if r.pass_id == "ConvBatchnormFusionPass" and not r.originals]
    assert table_row.status == AGREED and "done by AMCT before GE" in table_row.detail

    # the same fused side read on its own (not a bundle's: FE saw the model unfolded) is a disagreement
    alone = report_of(conv_bn, results / "fused")
    assert ledger_row(alone)["status"] == "disagree" and alone["summary"]["ledger_disagreements"] == 1


def test_fe_folding_more_after_amct_stays_a_disagreement(tmp_path, conv_bn):
    results = write_bundle_results(tmp_path / "results", conv_bn,
                                   {"ConvBatchnormFusionPass": (2, 2), GE_ONLY_PASS: (2, 2)})
    row = ledger_row(report_of(conv_bn, results))
    assert row["status"] == "disagree" and row["note"] == "AMCT folded 1 before GE, yet FE folded 2 more on the device"


def test_the_table_rows_say_what_the_toolchain_did(tmp_path, conv_bn, load_sample):
    missed = report_of(conv_bn, write_npu_run(tmp_path / "unfused", conv_bn, toolchain_fuses=False,
                                              ledger={"ConvBatchnormFusionPass": (1, 0), GE_ONLY_PASS: (2, 2)}))
    rows = check_rows(missed)
    conv = next(r for r in rows if r.pass_id == "ConvBatchnormFusionPass" and r.originals)
    assert conv.status == MISSING and conv.originals == ("conv1", "bn1") and conv.node == "conv1"
    assert "bn1 ran as kernels of their own" in conv.detail
    counts = next(r for r in rows if r.pass_id == "ConvBatchnormFusionPass" and not r.originals)
    assert counts.status == DIFFERENT and counts.toolchain.endswith("1 matched, 0 fused")
    extra = next(r for r in rows if r.status == EXTRA)
    assert extra.pass_id == GE_ONLY_PASS and extra.originals == ()

    pipeline = run_pipeline(load_sample("abs_relu_exp"))
    root = write_npu_run(tmp_path / "fused", pipeline)
    dump = next(root.glob("dumps/*/ge_proto_*PreRunAfter*"))  # the toolchain fused only abs and relu
    dump.write_text(dump.read_text().replace('          s: "exp_0"\n', "", 1))
    result = import_run_file(root, pipeline.original, pipeline.fused)
    report = check_imported(pipeline, root, result, model="abs_relu_exp")
    predicted, toolchain_own = [r for r in check_rows(report) if r.pass_id == "AutoFusePass"]
    assert predicted.status == DIFFERENT and predicted.node == "autofuse_pointwise_0_Abs_Relu_Exp"
    assert "dump: PreRunAfterAfterPrecisionRefine: abs_0, relu_0 in" in predicted.detail  # the profile said found
    assert toolchain_own.status == DIFFERENT and toolchain_own.originals == ("abs_0", "relu_0")
    assert not any(r.status == AGREED for r in check_rows(report) if r.pass_id == "AutoFusePass")
