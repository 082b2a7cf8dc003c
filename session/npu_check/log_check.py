"""The toolchain's logs set against FuseLens's prediction, pass by pass.

A log names passes, not matches: a scope pass registered (general or not) and, per graph, whether its
patterns matched; an FE graph fusion pass that ran and how long it took. So each FuseLens pass the log
speaks of gets one row: what the log says, what FuseLens predicts, and whether the two agree, the fusion is
missing on the device (the pass did not match, or never ran, where FuseLens predicts matches) or extra there
(it matched where FuseLens predicts none). A pass that ran without saying what it rewrote is unverifiable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuselens.core.ascend.toolchain_log import REFUSAL_CODES, ToolchainLog
from fuselens.passes.config import AUTOFUSE_PASS_ID
from fuselens.passes.pipeline import PipelineResult

AGREE, MISSING, EXTRA, UNVERIFIABLE = "agree", "missing", "extra", "unverifiable"


@dataclass(frozen=True)
class LogRow:
    """One FuseLens pass as the logs show it."""

    pass_id: str  # FuseLens's pass
    name: str  # the toolchain's name for it, as the log writes it
    status: str  # AGREE, MISSING, EXTRA or UNVERIFIABLE
    log: str  # what the log says
    predicted: int  # FuseLens's matches (rewrites) for the pass
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"pass": self.pass_id, "toolchain_name": self.name, "status": self.status, "log": self.log,
                "predicted_matches": self.predicted, "note": self.note}


def times(n: int, word: str = "time") -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def log_rows(pipeline: PipelineResult, log: ToolchainLog) -> list[LogRow]:
    """A row per FuseLens pass the logs speak of (scope passes, FE passes doing an AMCT fold, AutoFuse's
    refusals), in catalog order."""
    config = pipeline.config
    matches = {r.pass_id: r.match_count for r in pipeline.results}
    ran = log.fe_passes()
    rows = []
    for cls in config.catalog():
        predicted = matches.get(cls.id, 0)
        off = "" if config.is_enabled(cls.id) else "; the pass is switched off in this FuseLens configuration"
        switch = cls.switch
        summary = next((s for n in switch.names if (s := log.scope_pass(n)) is not None), None)
        if summary is not None and (summary.ran or predicted):  # a registration alone, with nothing predicted: no news
            rows.append(_scope_row(cls.id, summary.name, summary.registered, summary.matched, summary.not_matched,
                                   predicted, off))
            continue
        fe = next((n for n in switch.ge_passes if n in ran), None)
        if fe is not None:
            runs, total = ran[fe]
            rows.append(LogRow(cls.id, fe, UNVERIFIABLE, f"FE ran {fe} {times(runs)}, {total} us in all",
                               predicted, "the log does not say what it rewrote; fusion_result.json does"))
        elif switch.ge_passes and ran and predicted:
            names = " or ".join(switch.ge_passes)
            rows.append(LogRow(cls.id, switch.ge_passes[0], MISSING, f"FE ran {len(ran)} graph fusion passes, not "
                               f"{names}", predicted, f"FuseLens predicts {predicted} folds: was {names} switched "
                               "off (fusion switch file), or is this another graph's log?"))
    if log.refusals and any(cls.id == AUTOFUSE_PASS_ID for cls in config.catalog()):
        codes: dict[str, int] = {}
        for refusal in log.refusals:
            codes[refusal.code] = codes.get(refusal.code, 0) + 1
        said = ", ".join(f"{code} x{n}" + (f" ({REFUSAL_CODES[code]})" if code in REFUSAL_CODES else "")
                         for code, n in codes.items())
        rows.append(LogRow(AUTOFUSE_PASS_ID, "AutoFuse", UNVERIFIABLE, f"AutoFuse refused {len(log.refusals)} "
                           f"fusions: {said}", matches.get(AUTOFUSE_PASS_ID, 0),
                           "a refusal between two nodes of one FuseLens kernel shows on that prediction"))
    return rows


def _scope_row(pass_id: str, name: str, registered: bool | None, matched: int, not_matched: int, predicted: int,
               off: str) -> LogRow:
    runs = matched + not_matched
    mine = f"FuseLens predicts {predicted} match{'es' if predicted != 1 else ''}"
    if matched:
        said = f"the log says {name} matched in {matched} of {times(runs, 'run')}"
        if predicted:
            return LogRow(pass_id, name, AGREE, said, predicted, f"{mine} (the log names no scope)")
        return LogRow(pass_id, name, EXTRA, said, predicted, f"{mine}{off}: compare the scopes the toolchain saw "
                                                             "(the PreRunBegin dump) with the model's")
    if not_matched:
        said = f"the log says {name} did not match ({times(not_matched)})"
        if predicted:
            return LogRow(pass_id, name, MISSING, said, predicted, f"{mine}: check the graph's scope names (the "
                                                                   "toolchain matches scopes by name and op census)")
        return LogRow(pass_id, name, AGREE, said, predicted, mine + off)
    state = "on (general)" if registered else "off (is_enable = false)"
    said = f"the log says {name} was registered {state} and never ran"
    if predicted and not registered:
        return LogRow(pass_id, name, MISSING, said, predicted, f"{mine}: add {name} to enable_scope_fusion_passes")
    return LogRow(pass_id, name, UNVERIFIABLE, said, predicted, f"{mine}: the log holds no run of the scope "
                                                                "passes (was the graph parsed in another log?)")
