"""The audit's machine-readable reports: the JSON (everything, with a format and version) and JUnit XML
(one test case per model, so any CI lists the zoo)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic, write_json_atomic

AUDIT_FORMAT = "fuselens-audit"
AUDIT_VERSION = 1

Report = dict[str, Any]


def write_json(path: str | os.PathLike[str], report: Report) -> None:
    write_json_atomic(path, report)


def read_report(path: str | os.PathLike[str]) -> Report:
    """An earlier audit's JSON (a baseline), refused with one line if it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FuseLensError(f"{path}: cannot read the audit report ({e})") from None
    if not isinstance(data, dict) or data.get("format") != AUDIT_FORMAT:
        raise FuseLensError(f"{path}: not a FuseLens audit report (no \"format\": \"{AUDIT_FORMAT}\")")
    if data.get("version") != AUDIT_VERSION:
        raise FuseLensError(f"{path}: audit report version {data.get('version')}; this FuseLens reads "
                            f"version {AUDIT_VERSION}")
    return data


def model_failures(report: Report) -> dict[str, list[str]]:
    """Per model, why its test case fails: it did not load, crashed or timed out, disagrees numerically,
    or regressed against the baseline."""
    failures: dict[str, list[str]] = {row["model"]: [] for row in report["models"]}
    for row in report["models"]:
        if row["status"] != "ok":
            failures[row["model"]].append(row["reason"] or row["status"])
        numeric = row.get("numeric") or {}
        if numeric.get("error"):
            failures[row["model"]].append(f"numeric check failed: {numeric['error']}")
        elif numeric and not numeric.get("allclose"):
            failures[row["model"]].append(f"the fused graph disagrees with the original (max abs error "
                                          f"{numeric.get('max_abs')}, max rel {numeric.get('max_rel')})")
    for regression in report.get("regressions", []):
        failures.setdefault(regression["model"], []).append(f"regression: {regression['text']}")
    return failures


def junit_xml(report: Report) -> bytes:
    failures = model_failures(report)
    rows = {row["model"]: row for row in report["models"]}
    suite = ET.Element("testsuite", name="fuselens audit", tests=str(len(failures)),
                       failures=str(sum(1 for f in failures.values() if f)), errors="0", skipped="0",
                       time=f"{sum(row.get('seconds', 0.0) for row in report['models']):.3f}")
    for model, reasons in failures.items():
        row = rows.get(model, {})
        case = ET.SubElement(suite, "testcase", classname="fuselens.audit", name=model,
                             time=f"{row.get('seconds', 0.0):.3f}")
        if reasons:
            failure = ET.SubElement(case, "failure", message=reasons[0][:500], type=row.get("status", "regression"))
            failure.text = "\n".join(reasons)
        elif row:
            counts = ", ".join(f"{p} {c['matches']}" for p, c in row.get("passes", {}).items() if c["matches"])
            ET.SubElement(case, "system-out").text = (f"{row['nodes_before']} -> {row['nodes_after']} nodes; "
                                                      f"matches: {counts or 'none'}")
    root = ET.Element("testsuites", name="fuselens audit")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_junit(path: str | os.PathLike[str], report: Report) -> None:
    write_bytes_atomic(path, junit_xml(report))
