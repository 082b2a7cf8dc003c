"""Across the zoo: the near-miss reasons ranked by what they cost, the models × passes table of matches,
the models whose numerics disagree, the slowest fused graphs. Plain data from the rows alone, so a
saved audit's summary is the same as the one it was written with."""

from __future__ import annotations

from collections import Counter
from typing import Any

SLOWEST = 10

Row = dict[str, Any]


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('ch') else 's'}"


def ranked_reasons(rows: list[Row]) -> list[dict[str, Any]]:
    """One entry per reason class: the matches it costs (its near misses) in how many models, most models
    first; `first` is the first model that has it and the near miss there."""
    kinds: dict[str, dict[str, Any]] = {}
    for row in rows:
        for near in row.get("near_misses", []):
            entry = kinds.setdefault(near["kind"], {
                "kind": near["kind"], "title": near["kind_title"], "passes": [], "models": [], "matches": 0,
                "example": near["reason"], "first": {"model": row["model"], "pass": near["pass"],
                                                     "anchor": near["anchor"]}})
            entry["matches"] += 1
            if row["model"] not in entry["models"]:
                entry["models"].append(row["model"])
            if near["pass"] not in entry["passes"]:
                entry["passes"].append(near["pass"])
    ranked = sorted(kinds.values(), key=lambda e: (-len(e["models"]), -e["matches"], e["title"]))
    for entry in ranked:
        entry["summary"] = (f"{entry['title']}: {plural(entry['matches'], 'match')} in "
                            f"{plural(len(entry['models']), 'model')}")
    return ranked


def pass_table(rows: list[Row]) -> dict[str, Any]:
    """The pass ids in pipeline order, and per audited model its match count of each."""
    passes: list[str] = []
    for row in rows:
        passes += [p for p in row.get("passes", {}) if p not in passes]
    return {"passes": passes,
            "rows": [{"model": row["model"], "matches": {p: row["passes"][p]["matches"] for p in row["passes"]}}
                     for row in rows if "passes" in row]}


def disagreeing(rows: list[Row]) -> list[dict[str, Any]]:
    """The models whose fused graph does not compute what the original does (or could not be compared); a
    model that crashed or timed out is named by its status instead."""
    found = []
    for row in rows:
        numeric = row.get("numeric") if row.get("status") == "ok" else None
        if numeric and (numeric.get("error") or not numeric.get("allclose")):
            found.append({"model": row["model"], "max_abs": numeric.get("max_abs"), "max_rel": numeric.get("max_rel"),
                          "error": numeric.get("error", "")})
    return found


def slowest(rows: list[Row], count: int = SLOWEST) -> list[dict[str, Any]]:
    timed = [row for row in rows if (row.get("timing") or {}).get("fused_us") is not None]
    timed.sort(key=lambda row: -row["timing"]["fused_us"])
    return [{"model": row["model"], **row["timing"]} for row in timed[:count]]


def summarize(rows: list[Row]) -> dict[str, Any]:
    statuses = Counter(row["status"].split(" (")[0] for row in rows)
    return {"statuses": dict(sorted(statuses.items())), "matches": sum(
        p["matches"] for row in rows for p in row.get("passes", {}).values()),
        "reasons": ranked_reasons(rows), "table": pass_table(rows), "disagreeing": disagreeing(rows),
        "slowest": slowest(rows)}
