"""A match's explanation (passes/explain.py) as HTML or Markdown, for the properties panel and lessons.

Rendering only: every number comes from the explanation, so the window (no TensorFlow) and the
lesson export show exactly what the fuse report holds. The HTML keeps to the subset a Qt text
browser renders (tables, <sub>/<sup>, inline styles); formulas are Unicode text in a serif face.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

FORMULA = "font-family:serif;font-size:115%;margin:2px 0 2px 10px"



def _found(feature_row: dict) -> str:
    """A census row's count or value as read: -1 (the op is absent) reads "none"."""
    found = feature_row["found"]
    return "none" if found == -1 else str(found if found is not None else "")

def esc(value: object) -> str:
    return html.escape(str(value))


def human_bytes(value: int | None) -> str:
    if value is None:
        return "unknown (a dimension is not known)"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit} ({value:,} B)"
    return f"{value:,} B"


def _rows(pairs: Iterable[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td style='padding:1px 8px 1px 0'><b>{k}</b></td><td>{v}</td></tr>" for k, v in pairs)
    return f"<table cellspacing='0'>{cells}</table>"


def _formulas(lines: Iterable[str]) -> str:
    return "".join(f"<div style='{FORMULA}'>{esc(line)}</div>" for line in lines)


def _saved_html(saved: dict[str, Any]) -> str:
    rows = [("kernel launches", f"{saved.get('launches_before')} → {saved.get('launches_after')} "
                                f"(saved {saved.get('launches_saved')})"),
            ("ops", f"{len(saved.get('ops_before', []))} → {len(saved.get('ops_after', []))}")]
    if "weight_bytes_before" in saved:
        rows.append(("weights read per inference",
                     f"{saved['weights_before']} tensors, {human_bytes(saved['weight_bytes_before'])} → "
                     f"{saved['weights_after']} tensors, {human_bytes(saved['weight_bytes_after'])} "
                     f"(saved {human_bytes(saved['weight_bytes_saved'])})"))
    if saved.get("intermediate_bytes") is not None or saved.get("intermediates"):
        rows.append(("intermediates not written",
                     ", ".join(f"<tt>{esc(i['tensor'])}</tt> {human_bytes(i['bytes'])}"
                               for i in saved.get("intermediates", [])) or "—"))
    return "<h4 style='margin:6px 0 2px'>What the rewrite saved</h4>" + _rows(rows)


def _amct_example(e: dict[str, Any], kind: str) -> str:
    parts = [f"<h4 style='margin:6px 0 2px'>Output channel {e['channel']}, with this model's numbers</h4>"]
    if kind == "mul_fold":
        parts.append(_formulas([f"s = {e['s']}",
                                f"w′{list(e['weight_index'])} = {e['w']} · {e['s']} = {e['w_formula']}",
                                f"b′ = {e['b']} · {e['s']} = {e['b_formula']}"]))
    else:
        parts.append(_formulas([f"γ = {e['γ']},  β = {e['β']},  μ = {e['μ']},  σ² = {e['σ²']},  ε = {e['ε']}",
                                f"s = {e['γ']} / √({e['σ²']} + {e['ε']}) = {e['s']}",
                                f"w′{list(e['weight_index'])} = {e['w']} · {e['s']} = {e['w_formula']}",
                                f"b′ = {e['β']} + ({e['b']} − {e['μ']}) · {e['s']} = {e['b_formula']}"]))
    rows = [("folded filter", f"<tt>{esc(e.get('folded_filter'))}</tt>{list(e['weight_index'])} = "
                              f"<b>{e.get('w_folded')}</b> (read back from the fused graph)")]
    if "b_folded" in e:
        rows.append(("folded bias", f"<tt>{esc(e['folded_bias'])}</tt>[{e.get('branch_channel', e['channel'])}] = "
                                    f"<b>{e['b_folded']}</b>"))
    if "branch_op" in e:
        rows.append(("branch", f"<tt>{esc(e['branch_op'])}</tt>, its channel {e['branch_channel']}"))
    return "".join(parts) + _rows(rows)


def _small_op_html(x: dict[str, Any]) -> str:
    terms = "".join(f"<tr><td><tt>{esc(t['node'].rsplit('/', 1)[-1])}</tt></td><td>{esc(t['op'])}</td>"
                    f"<td style='font-family:serif'>{esc(t['term'])}</td><td>{esc(t['meaning'])}</td></tr>"
                    for t in x["terms"])
    e = x["example"]
    example = _formulas([f"γ = {e['γ']},  β = {e['β']},  μ = {e['μ']},  σ² = {e['σ²']},  ε = {e['ε']}",
                         f"s = {e['γ']} / √({e['σ²']} + {e['ε']}) = {e['s']},  β − μ · s = {e['shift']}"])
    fused = ""
    if e.get("fused_inputs"):
        values = ", ".join(f"{k} = {v}" for k, v in e["fused_inputs"].items())
        fused = _rows([("FusedBatchNormV3", f"<tt>{esc(e['fused_node'])}</tt> reads {esc(values)}, "
                                            f"ε = {e['fused_epsilon']}")])
    return ("<h4 style='margin:6px 0 2px'>Which small op is which term</h4>"
            f"<table cellspacing='0' cellpadding='2'><tr><th>node</th><th>op</th><th>term</th><th></th></tr>"
            f"{terms}</table><h4 style='margin:6px 0 2px'>Channel {e['channel']}</h4>{example}{fused}")


def _scope_html(x: dict[str, Any]) -> str:
    parts = []
    for c in x["census"]:
        rows = "".join(
            f"<tr><td>{esc(f['op'] or f['rule'])}</td><td>{esc(_found(f))}</td>"
            f"<td>{esc(f['needs'])}</td><td>{'✔' if f['ok'] else '✘'}</td></tr>" for f in c["features"])
        parts.append(f"<p style='margin:4px 0 0'>scope <tt>{esc(c['scope'])}</tt> ({esc(c['sub_type'])} pattern)</p>"
                     "<table cellspacing='0' cellpadding='2'><tr><th>op</th><th>found</th><th>rule needs</th>"
                     f"<th></th></tr>{rows}</table>")
    wiring = [(f"input {w['index']}", f"<tt>{esc(w['tensor'])}</tt> → {esc(w['rule'])}") for w in x["wiring"]["inputs"]]
    wiring += [(f"output {w['index']}", f"{esc(w['rule'])} (<tt>{esc(w['tensor'])}</tt>)")
               for w in x["wiring"]["outputs"]]
    eps = f"ε = {x['epsilon']}" if x.get("epsilon") is not None else ""
    return (f"<h4 style='margin:6px 0 2px'>What {esc(x['op_type'])} computes</h4>{_formulas(x['formula'])}"
            + (_formulas([eps]) if eps else "")
            + "<h4 style='margin:6px 0 2px'>Op census against the rule</h4>" + "".join(parts)
            + "<h4 style='margin:6px 0 2px'>Wiring</h4>" + _rows(wiring))


def _autofuse_html(x: dict[str, Any]) -> str:
    ops = " → ".join(f"{esc(o['ascend_op'])} <small>({esc(o['class'])})</small>" for o in x["ops"])
    inter = "".join(f"<tr><td><tt>{esc(i['tensor'])}</tt></td><td>{esc(i['shape'])}</td>"
                    f"<td>{human_bytes(i['bytes'])}</td></tr>" for i in x["intermediates"])
    name = " _ ".join(esc(p) for p in x["name"]["parts"])
    return (f"<h4 style='margin:6px 0 2px'>Ops in kernel order</h4><p>{ops}</p>"
            f"<p><b>category {esc(x['category'])}</b>: {esc(x['why'])}</p>"
            "<h4 style='margin:6px 0 2px'>Intermediate tensors no longer written to memory</h4>"
            f"<table cellspacing='0' cellpadding='2'><tr><th>tensor</th><th>shape</th><th>size</th></tr>{inter}</table>"
            + _rows([("bytes moved", f"{human_bytes(x['bytes_moved_before'])} → {human_bytes(x['bytes_moved_after'])}"),
                     ("name", f"<tt>{name}</tt>"), ("", esc(x["name"]["rule"]))]))


def explanation_html(x: dict[str, Any] | None) -> str:
    """The explanation as HTML (empty when the match has none)."""
    if not x:
        return ""
    head = f"<h4 style='margin:8px 0 2px'>Explained: {esc(x.get('title', ''))}</h4>"
    if x.get("error"):
        return head + f"<p>{esc(x['error'])}</p>"
    kind = x.get("kind")
    if kind in ("conv_bn", "depthwise_bn", "group_conv_bn", "mul_fold"):
        body = _formulas(x["formula"]) + _amct_example(x["example"], kind)
    elif kind == "small_op_bn":
        body = _formulas(x["formula"]) + _small_op_html(x)
    elif kind == "scope":
        body = _scope_html(x)
    elif kind == "autofuse":
        body = _autofuse_html(x)
    else:
        return head
    return head + body + _saved_html(x.get("saved", {}))


def explanation_markdown(x: dict[str, Any] | None) -> str:
    """The explanation as Markdown: formulas, the worked example and the savings as plain lines."""
    if not x:
        return ""
    lines = [f"**{x.get('title', '')}**", ""]
    if x.get("error"):
        return "\n".join([*lines, x["error"], ""])
    lines += [f"    {f}" for f in x.get("formula", [])]
    example = x.get("example")
    if example:
        lines += ["", "Worked example: " + ", ".join(f"{k} = {v}" for k, v in example.items()
                                                  if not isinstance(v, dict))]
    for t in x.get("terms", []):
        lines.append(f"- `{t['node']}` ({t['op']}): {t['term']} — {t['meaning']}")
    for c in x.get("census", []):
        checks = ", ".join(f"{f['op'] or f['rule']} {_found(f)} (needs {f['needs']}) {'✔' if f['ok'] else '✘'}"
                           for f in c["features"])
        lines.append(f"- scope `{c['scope']}`: {checks}")
    if x.get("kind") == "autofuse":
        lines += [f"- ops: {' -> '.join(o['ascend_op'] for o in x['ops'])}; category {x['category']}: {x['why']}",
                  *(f"- not written: `{i['tensor']}` {i['shape']} {human_bytes(i['bytes'])}"
                    for i in x["intermediates"]),
                  f"- bytes moved: {human_bytes(x['bytes_moved_before'])} -> {human_bytes(x['bytes_moved_after'])}",
                  f"- name: `{x['name']['kernel']}` = {' + '.join(x['name']['parts'])}"]
    saved = x.get("saved", {})
    if saved:
        text = f"- launches {saved.get('launches_before')} -> {saved.get('launches_after')}"
        if "weight_bytes_saved" in saved:
            text += f"; weights read {human_bytes(saved['weight_bytes_before'])} -> " \
                    f"{human_bytes(saved['weight_bytes_after'])}"
        lines.append(text)
    return "\n".join(lines) + "\n"
