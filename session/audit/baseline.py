"""The CI gate: an audit against an earlier one (its JSON). A regression is a model that loses matches of a
pass, gains numeric error beyond the tolerance, newly fails (to load, or crashes, or times out), or, when
both audits timed the graphs, runs its fused graph slower by more than the allowed share."""

from __future__ import annotations

from typing import Any

DEFAULT_TOLERANCE = 1e-5  # max abs error a model may gain
DEFAULT_SLOWER = 0.10

Report = dict[str, Any]


def regressions(old: Report, new: Report, *, tolerance: float = DEFAULT_TOLERANCE,
                slower: float | None = DEFAULT_SLOWER) -> list[dict[str, Any]]:
    """Each regression as {model, kind, pass (or None), text}; `slower` None: timings are not compared."""
    before = {row["model"]: row for row in old.get("models", [])}
    found = []

    def add(model: str, kind: str, text: str, pass_id: str | None = None) -> None:
        found.append({"model": model, "kind": kind, "pass": pass_id, "text": f"{model}: {text}"})

    for row in new.get("models", []):
        name, then = row["model"], before.get(row["model"])
        if then is None:
            continue
        if then["status"] == "ok" and row["status"] != "ok":
            add(name, "fails", f"{row['status']} (was ok): {row['reason']}")
            continue
        if row["status"] != "ok":
            continue
        for pass_id, counts in then.get("passes", {}).items():
            now = row.get("passes", {}).get(pass_id, {}).get("matches", 0)
            if now < counts["matches"]:
                off = "" if pass_id in row.get("passes", {}) else " (the pass did not run)"
                add(name, "matches", f"loses {counts['matches'] - now} of {counts['matches']} matches of "
                                     f"{pass_id}{off}", pass_id)
        _numeric(then.get("numeric"), row.get("numeric"), tolerance, lambda text, n=name: add(n, "numeric", text))
        then_us, now_us = ((r.get("timing") or {}).get("fused_us") for r in (then, row))
        if slower is not None and then_us and now_us and now_us > then_us * (1 + slower):
            add(name, "slower", f"the fused graph is {now_us / then_us - 1:.0%} slower ({then_us:.0f} -> "
                                f"{now_us:.0f} us a step; allowed {slower:.0%})")
    return found


def _numeric(then: dict[str, Any] | None, now: dict[str, Any] | None, tolerance: float, add: Any) -> None:
    if not then or not now or then.get("error"):
        return
    if now.get("error"):
        add(f"the numeric check fails now: {now['error']}")
    elif then.get("allclose") and not now.get("allclose"):
        add(f"the fused graph no longer agrees with the original (max abs error {now.get('max_abs')})")
    elif (now.get("max_abs") or 0.0) - (then.get("max_abs") or 0.0) > tolerance:
        add(f"max abs error grew from {then.get('max_abs'):.3g} to {now.get('max_abs'):.3g} "
            f"(tolerance {tolerance:g})")
