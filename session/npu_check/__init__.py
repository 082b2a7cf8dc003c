"""Predicted vs actual: does FuseLens tell the truth about the toolchain?

FuseLens predicts, per match, that some original TF nodes will run as one kernel (a scope or
AutoFuse node) or that some will vanish into another (a BatchNorm folded into its conv). An NPU
run brings back evidence (evidence.py); each source gives a verdict per prediction (verdicts.py,
predictions.py) and the report (report.py) lists them with the toolchain fusions FuseLens did not
predict and the per-pass ledger rows. The window's table rows are gui/predicted_rows.py's, the
CLI's text cli/check_text.py's.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it; imported when first asked for (PEP 562), so a caller of one part
# (the window's table reads the statuses) does not bring in the evidence readers.
_EXPORTS = {
    "NpuEvidence": "evidence", "gather_evidence": "evidence", "Prediction": "predictions", "predictions": "predictions",
    "CheckReport": "report", "PredictedRow": "report", "Summary": "report", "Unpredicted": "report",
    "check_imported": "report", "check_npu_result": "report", "check_prediction": "report",
    "check_toolchain_records": "report", "LogRow": "log_check",
    "FOUND": "finding", "NOT_FOUND": "finding", "UNKNOWN": "finding", "Finding": "finding", "Verdict": "verdicts",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
