"""Predicted vs actual as the window's table (gui/predicted_rows.py's rows of session/npu_check's report), and
AMCT's folds on an NPU bundle's fused side: AMCT folded them before GE, so FE having nothing left to fold is
agreement, not a disagreement, and the toolchain's records there name the folded graph's nodes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fuselens.core.ascend.profile_import import import_run_file
from fuselens.core.ascend.remote import missing_results
from fuselens.gui.predicted_rows import AGREED, DIFFERENT, EXTRA, MISSING, check_rows
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.npu_check import check_imported
from tests.npu_artifacts import GE_ONLY_PASS, write_npu_run


@pytest.fixture(scope="module")
def conv_bn(load_sample):
    return run_pipeline(load_sample("conv_bn"))


def report_of(pipeline, path):
    result = import_run_file(path, pipeline.original, pipeline.fused)
    return check_imported(pipeline, path, result, model="conv_bn")


def ledger_row(report, name="ConvBatchnormFusionPass"):
    return next(r for r in report.to_json()["ledger"] if r["pass"] == name)


def write_bundle_results(root, pipeline, fe_ledger):
    """results/ laid out as a bundle's driver brings it back (complete). The original side ran the model unfused;
    the fused side was handed AMCT's folded graph, and the toolchain fused that as FuseLens would (the stub host's
    way), so its records name the folded graph's nodes and FE's ledger there is `fe_ledger`."""
    handed = run_pipeline(pipeline.original, pipeline.config, families=("amct",)).fused
    sides = (("original", pipeline, False, {GE_ONLY_PASS: (2, 2)}),
             ("fused", run_pipeline(handed, pipeline.config), True, fe_ledger))
    for side, ran, fuses, ledger in sides:
        folder = write_npu_run(root / side, ran, toolchain_fuses=fuses, ledger=ledger)
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
    assert report.summary.ledger_disagreements == 0
    [table_row] = [r for r in check_rows(report) if r.pass_id == "ConvBatchnormFusionPass" and not r.originals]
    assert table_row.status == AGREED and "done by AMCT before GE" in table_row.detail

    # the toolchain's records name the folded graph's nodes (conv1/BiasAdd, not bn1): AutoFuse's kernel agrees
    predicted = {r.pass_id: r for r in check_rows(report) if r.kind == "prediction"}
    assert {name: r.status for name, r in predicted.items()} == {"ConvBatchnormFusionPass": AGREED,
                                                                 "AutoFusePass": AGREED}
    assert "amct: done by AMCT before GE" in predicted["ConvBatchnormFusionPass"].detail
    assert "holds conv1/BiasAdd, relu1" in predicted["AutoFusePass"].detail
    assert predicted["AutoFusePass"].originals == ("conv1", "bn1", "relu1")  # a click still selects the model's

    # the same fused side read on its own (not a bundle's: as if FE saw the model unfolded) disagrees twice
    alone = report_of(conv_bn, results / "fused")
    assert ledger_row(alone)["status"] == "disagree" and alone.summary.ledger_disagreements == 1
    assert {r.status for r in check_rows(alone) if r.pass_id == "AutoFusePass"} == {DIFFERENT}


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
