"""The audit as one self-contained HTML page: nothing fetched from outside (inline CSS, inline JS, inline SVG),
so it opens offline and from a CI artefact. A sortable table of the models, the models × passes heat
table, the ranked near-miss reasons linking to each model's section, and per model its top near misses
with the graph around each."""

from __future__ import annotations

import html
import os
import re
from typing import Any

from fuselens.core.formats.io import write_bytes_atomic
from fuselens.session.audit.reasons import top_by_kind
from fuselens.session.audit.reports import model_failures

SHOWN_NEAR_MISSES = 3
SHOWN_MODELS = 6  # models named per reason (the rest counted)

STYLE = """
body{font-family:sans-serif;margin:24px auto;max-width:1400px;padding:0 16px;color:#202124;font-size:14px}
h1{font-size:1.6em;margin-bottom:4px} h2{border-top:1px solid #ddd;padding-top:14px;margin-top:28px}
h3{margin-bottom:4px} .muted{color:#5f6368}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top} th{background:#f1f3f4} td.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none} table.sortable th:after{content:" \\2195";color:#9aa0a6}
.ok{color:#188038;font-weight:bold} .bad{color:#c5221f;font-weight:bold}
.heat td.n{min-width:34px;text-align:center} .heat th.pass{writing-mode:vertical-rl;transform:rotate(180deg);
white-space:nowrap;font-weight:normal;padding:6px 2px}
.regression{background:#fce8e6} figure{margin:6px 0;overflow:auto;max-width:100%;border:1px solid #eee;padding:4px}
.reason{max-width:700px}
"""

# Click a header to sort by that column; numbers sort as numbers, a second click reverses.
SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, col){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var down = th.dataset.dir !== 'down'; th.dataset.dir = down ? 'down' : 'up';
      rows.sort(function(a, b){
        var x = a.cells[col].dataset.v || a.cells[col].textContent;
        var y = b.cells[col].dataset.v || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? -c : c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def anchor(model: str) -> str:
    """The id of a model's section."""
    return "model-" + re.sub(r"[^A-Za-z0-9_-]+", "-", model).strip("-")


def _link(model: str) -> str:
    return f"<a href='#{anchor(model)}'>{_e(model)}</a>"


def _number(value: float | None, fmt: str = "{:.3g}") -> str:
    return "—" if value is None else fmt.format(value)


def _cell(text: str, sort: Any = None, cls: str = "") -> str:
    value = f" data-v='{_e(sort)}'" if sort is not None else ""
    return f"<td{value}{f' class={cls!r}' if cls else ''}>{text}</td>"


def _models_table(rows: list[dict[str, Any]], failures: dict[str, list[str]]) -> str:
    head = ("<tr><th>model</th><th>status</th><th>nodes before</th><th>nodes after</th><th>matches</th>"
            "<th>near misses</th><th>inside a fusion</th><th>predicted kernels</th><th>max abs error</th>"
            "<th>numerics</th><th>fused step (µs)</th><th>speed-up</th><th>audit (s)</th></tr>")
    body = []
    for row in rows:
        ok = row["status"] == "ok"
        numeric = row.get("numeric") or {}
        timing = row.get("timing") or {}
        verdict = ("—" if not numeric else "<span class='bad'>error</span>" if numeric.get("error") else
                   "<span class='ok'>agrees</span>" if numeric.get("allclose") else
                   "<span class='bad'>disagrees</span>")
        status = f"<span class='{'ok' if ok and not failures[row['model']] else 'bad'}'>{_e(row['status'])}</span>"
        if not ok:
            status += f"<br><span class='muted'>{_e(row['reason'])}</span>"
        matches = sum(p["matches"] for p in row.get("passes", {}).values())
        body.append("<tr>" + "".join([
            _cell(_link(row["model"]), row["model"]), _cell(status, row["status"]),
            _cell(_number(row.get("nodes_before"), "{}"), row.get("nodes_before", -1), "n"),
            _cell(_number(row.get("nodes_after"), "{}"), row.get("nodes_after", -1), "n"),
            _cell(str(matches) if ok else "—", matches if ok else -1, "n"),
            _cell(str(len(row.get("near_misses", []))) if ok else "—", len(row.get("near_misses", [])), "n"),
            _cell(_number(row.get("fused_share"), "{:.0%}"), row.get("fused_share", -1), "n"),
            _cell(str(len(row.get("kernels", []))) if ok else "—", len(row.get("kernels", [])), "n"),
            _cell(_number(numeric.get("max_abs")), numeric.get("max_abs", -1) or 0, "n"),
            _cell(verdict),
            _cell(_number(timing.get("fused_us"), "{:.0f}"), timing.get("fused_us", -1) or -1, "n"),
            _cell(_number(timing.get("speedup"), "{:.2f}×"), timing.get("speedup", -1) or -1, "n"),
            _cell(_number(row.get("seconds"), "{:.1f}"), row.get("seconds", 0), "n")]) + "</tr>")
    return f"<table class='sortable'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _heat_table(table: dict[str, Any]) -> str:
    passes = table["passes"]
    if not passes:
        return "<p class='muted'>No model was fused.</p>"
    most = {p: max((r["matches"].get(p, 0) for r in table["rows"]), default=0) for p in passes}
    head = "<tr><th>model</th>" + "".join(f"<th class='pass' title='{_e(p)}'>{_e(p)}</th>" for p in passes) + "</tr>"
    body = []
    for row in table["rows"]:
        cells = []
        for p in passes:
            if p not in row["matches"]:
                cells.append("<td class='n muted' title='did not run'>·</td>")
                continue
            count = row["matches"][p]
            share = count / most[p] if most[p] else 0.0
            colour = f"rgba(26,115,232,{0.12 + 0.78 * share:.2f})" if count else "#fff"
            ink = "#fff" if share > 0.55 else "#202124"
            cells.append(f"<td class='n' style='background:{colour};color:{ink}' data-v='{count}'>{count}</td>")
        body.append(f"<tr><td>{_link(row['model'])}</td>{''.join(cells)}</tr>")
    return f"<table class='heat sortable'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _reasons_table(reasons: list[dict[str, Any]]) -> str:
    if not reasons:
        return "<p class='muted'>No near misses: every structure that looked like a pattern fused.</p>"
    body = []
    for rank, entry in enumerate(reasons, 1):
        first = entry["first"]
        shown = entry["models"][:SHOWN_MODELS]
        models = ", ".join(map(_link, shown)) + (f" and {len(entry['models']) - len(shown)} more"
                                                 if len(entry["models"]) > len(shown) else "")
        body.append("<tr>" + "".join([
            _cell(str(rank), rank, "n"), _cell(f"<b>{_e(entry['title'])}</b><br><span class='muted reason'>"
                                               f"e.g. {_e(first['model'])}: {_e(entry['example'])}</span>"),
            _cell(str(entry["matches"]), entry["matches"], "n"), _cell(str(len(entry["models"])),
                                                                       len(entry["models"]), "n"),
            _cell(models), _cell(", ".join(map(_e, entry["passes"])))]) + "</tr>")
    head = ("<tr><th>#</th><th>reason (its kind)</th><th>matches lost</th><th>models</th><th>which</th>"
            "<th>passes</th></tr>")
    return f"<table class='sortable'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _model_section(row: dict[str, Any], failures: list[str]) -> str:
    parts = [f"<section id='{anchor(row['model'])}'><h3>{_e(row['model'])}</h3>",
             f"<p class='muted'>{_e(row['spec'])}</p>"]
    if row["status"] != "ok":
        return "".join([*parts, f"<p class='bad'>{_e(row['status'])}: {_e(row['reason'])}</p></section>"])
    parts.append(f"<p>{row['nodes_before']} → {row['nodes_after']} nodes, {row['fused_share']:.0%} of them inside a "
                 f"fusion, {len(row['kernels'])} predicted fused kernels.</p>")
    parts += [f"<p class='bad'>{_e(f)}</p>" for f in failures]
    passes = [(p, c) for p, c in row["passes"].items() if c["matches"] or c["near_misses"] or c["errors"]]
    if passes:
        parts.append("<table><tr><th>pass</th><th>matches</th><th>near misses</th><th>errors</th></tr>" + "".join(
            f"<tr><td>{_e(p)}</td><td class='n'>{c['matches']}</td><td class='n'>{c['near_misses']}</td>"
            f"<td>{_e('; '.join(c['errors']))}</td></tr>" for p, c in passes) + "</table>")
    for near in (row["near_misses"][i] for i in top_by_kind(row["near_misses"], SHOWN_NEAR_MISSES)):
        parts.append(f"<h4>near miss {_e(near['pass'])}:{_e(near['anchor'])} — {_e(near['kind_title'])}</h4>"
                     f"<p class='reason'>{_e(near['reason'])}</p>")
        if near.get("svg"):
            parts.append(f"<figure>{near['svg']}<figcaption class='muted'>its nodes outlined in orange, what broke "
                         "the match in red</figcaption></figure>")
    if len(row["near_misses"]) > SHOWN_NEAR_MISSES:
        parts.append(f"<p class='muted'>… {len(row['near_misses']) - SHOWN_NEAR_MISSES} more near misses (the JSON "
                     "report lists them all)</p>")
    return "".join([*parts, "</section>"])


def audit_html(report: dict[str, Any]) -> str:
    rows, summary = report["models"], report["summary"]
    failures = model_failures(report)
    statuses = ", ".join(f"{n} {s}" for s, n in summary["statuses"].items())
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>FuseLens audit</title>",
             f"<style>{STYLE}</style></head><body><h1>FuseLens audit</h1>",
             f"<p class='muted'>{len(rows)} models ({statuses}), {summary['matches']} matches"
             + ("" if report["complete"] else f"; interrupted: {report['models_total'] - len(rows)} models not "
                                               "audited") + f". Passes on: {_e(', '.join(report['config']['enabled']))}"
             + "</p>"]
    regressions = report.get("regressions")
    if regressions is not None:
        parts.append(f"<h2>Regressions against the baseline ({len(regressions)})</h2>")
        parts.append("<ul>" + "".join(f"<li class='regression'>{_link(r['model'])}: {_e(r['text'])}</li>"
                                      for r in regressions) + "</ul>" if regressions else "<p class='ok'>None.</p>")
    parts += ["<h2>Near-miss reasons, by what they cost</h2>",
              "<ul>" + "".join(f"<li>{_e(r['summary'])}</li>" for r in summary["reasons"][:5]) + "</ul>",
              _reasons_table(summary["reasons"]), "<h2>Models</h2>", _models_table(rows, failures),
              "<h2>Matches per pass</h2>", _heat_table(summary["table"])]
    if summary["disagreeing"]:
        parts.append("<h2>Models whose numerics disagree</h2><ul>" + "".join(
            f"<li>{_link(d['model'])}: {_e(d['error'] or 'max abs error ' + _number(d['max_abs']))}</li>"
            for d in summary["disagreeing"]) + "</ul>")
    if summary["slowest"]:
        parts.append("<h2>Slowest fused graphs</h2><table><tr><th>model</th><th>fused step (µs)</th>"
                     "<th>original step (µs)</th><th>speed-up</th></tr>" + "".join(
                         f"<tr><td>{_link(s['model'])}</td><td class='n'>{_number(s['fused_us'], '{:.0f}')}</td>"
                         f"<td class='n'>{_number(s['original_us'], '{:.0f}')}</td>"
                         f"<td class='n'>{_number(s['speedup'], '{:.2f}×')}</td></tr>" for s in summary["slowest"])
                     + "</table>")
    parts.append("<h2>Each model</h2>")
    parts += [_model_section(row, failures[row["model"]]) for row in rows]
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "".join(parts)


def write_html(path: str | os.PathLike[str], report: dict[str, Any]) -> None:
    write_bytes_atomic(path, audit_html(report).encode("utf-8"))
