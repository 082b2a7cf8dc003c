"""Predicted vs actual: does FuseLens tell the truth about the toolchain?

FuseLens predicts, per match, that some original TF nodes will run as one kernel (a scope or
AutoFuse node) or that some will vanish into another (a BatchNorm folded into its conv). An NPU
run brings back evidence (evidence.py); each source gives a verdict per prediction (verdicts.py,
predictions.py) and the report (report.py) lists them with the toolchain fusions FuseLens did not
predict and the per-pass ledger rows. The window's table rows are gui/predicted_rows.py's, the
CLI's text cli/check_text.py's.
"""

from session.npu_check.evidence import NpuEvidence, gather_evidence
from session.npu_check.predictions import Prediction, predictions
from session.npu_check.report import (
    CheckReport,
    PredictedRow,
    Summary,
    Unpredicted,
    check_imported,
    check_npu_result,
    check_prediction,
)
from session.npu_check.verdicts import FOUND, NOT_FOUND, UNKNOWN, Finding, Verdict

__all__ = ["FOUND", "NOT_FOUND", "UNKNOWN", "CheckReport", "Finding", "NpuEvidence", "PredictedRow", "Prediction",
           "Summary", "Unpredicted", "Verdict", "check_imported", "check_npu_result", "check_prediction",
           "gather_evidence", "predictions"]
