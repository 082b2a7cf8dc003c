"""fusion_result.json: the toolchain's ledger of what each fusion pass matched and rewrote, per graph.

FE writes it at the end of compilation: one entry per graph, `session_and_graph_id_<s>_<g>`,
holding `graph_fusion` and `ub_fusion` sections of `pass -> {match_times, effect_times}` (UB
passes add `repository_hit_times`); every count is a string, and a pass that never matched is
absent. Writers of 2019-2020 put `"session_and_graph_id": "0_0"` inside each graph's object and
appended one object per graph, so the file is several JSON objects in a row: both forms load.

`match_times` counts structural pattern matches, `effect_times` the matches whose rewrite went
through; a match that was not effected is what FuseLens calls a near miss. FuseLens writes its
own prediction in the same shape (`passes/ledger.py`), and `compare_ledgers` sets the two side by
side.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.wording import shown

GRAPH_FUSION = "graph_fusion"
UB_FUSION = "ub_fusion"
SECTIONS = (GRAPH_FUSION, UB_FUSION)
KEY = "session_and_graph_id"
# Keys only fusion_result.json has, any one of which in a file's head marks it (the 2021-2022 form's ids included).
_MARKERS = (b'"graph_fusion"', b'"ub_fusion"', b'"session_and_graph_id', b'"sessionId"')
CURRENT = "current"  # {"session_and_graph_id_0_0": {...}, ...}
CONCATENATED = "concatenated"  # {"session_and_graph_id": "0_0", ...}{"session_and_graph_id": "0_1", ...}


@dataclass(frozen=True)
class PassCount:
    """One pass's counts in one graph."""

    name: str
    section: str  # graph_fusion | ub_fusion
    match_times: int
    effect_times: int
    repository_hit_times: int | None = None  # ub_fusion only

    def to_json(self) -> dict[str, str]:
        """FE's spelling: every count a string, keys in FE's (sorted) order."""
        out = {"effect_times": str(self.effect_times), "match_times": str(self.match_times)}
        if self.section == UB_FUSION:
            out["repository_hit_times"] = str(self.repository_hit_times or 0)
        return dict(sorted(out.items()))


@dataclass
class GraphLedger:
    """The passes of one compiled graph, keyed by (section, pass name)."""

    graph: str  # "0_0": session id and graph id as FE joins them
    passes: dict[tuple[str, str], PassCount] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{KEY}_{self.graph}"

    def add(self, count: PassCount) -> None:
        self.passes[(count.section, count.name)] = count

    def get(self, name: str) -> PassCount | None:
        """A pass by name, in whichever section it is (graph fusion first)."""
        return next((self.passes[(s, name)] for s in SECTIONS if (s, name) in self.passes), None)

    def names(self) -> list[str]:
        return list(dict.fromkeys(name for _, name in self.passes))

    def total_effects(self) -> int:
        return sum(p.effect_times for p in self.passes.values())

    def to_json(self) -> dict[str, Any]:
        """`{"graph_fusion": {...}, "ub_fusion": {...}}`; a section with no pass is left out, as FE does."""
        out: dict[str, Any] = {}
        for section in SECTIONS:
            entries = {name: c.to_json() for (s, name), c in sorted(self.passes.items()) if s == section}
            if entries:
                out[section] = entries
        return out


@dataclass
class FusionResult:
    """Every graph of one fusion_result.json, in file order."""

    source: str
    form: str  # current | concatenated
    graphs: list[GraphLedger] = field(default_factory=list)

    def graph(self, key: str) -> GraphLedger:
        """A graph by `0_0` or `session_and_graph_id_0_0`."""
        wanted = key.removeprefix(f"{KEY}_")
        for ledger in self.graphs:
            if ledger.graph == wanted:
                return ledger
        raise FuseLensError(f"{self.source}: no graph {key!r} (graphs: "
                            f"{', '.join(g.key for g in self.graphs) or 'none'})")

    def busiest(self) -> GraphLedger | None:
        """The graph with the most rewrites: the model's own graph, as a rule (others are init graphs)."""
        return max(self.graphs, key=lambda g: (g.total_effects(), len(g.passes)), default=None)

    def to_json(self) -> dict[str, Any]:
        return fusion_result_json(self.graphs)


def fusion_result_json(graphs: Iterable[GraphLedger]) -> dict[str, Any]:
    """Ledgers in the current fusion_result.json form."""
    return {g.key: g.to_json() for g in graphs}


def recognises(head: bytes) -> bool:
    """Whether a file whose first 64 KiB are `head` is a fusion_result.json, in any of its five shapes.

    JSON that opens with an object or a list and names one of FE's keys (`graph_fusion`, `ub_fusion`,
    `session_and_graph_id...`, `sessionId`) before the head ends, or the literal `null` FE writes for
    a run that compiled nothing. Decides from content alone: users rename the file.
    """
    text = head.lstrip(b"\xef\xbb\xbf").strip()
    if text == b"null":
        return True
    return text[:1] in (b"{", b"[") and any(marker in text for marker in _MARKERS)


def write_fusion_result(path: str | os.PathLike[str], graphs: Iterable[GraphLedger], *,
                        protect: str | None = None) -> Path:
    """Write ledgers as a fusion_result.json (current form, 4-space indent as FE writes it), atomically."""
    text = json.dumps(fusion_result_json(graphs), indent=4, sort_keys=True) + "\n"
    return write_bytes_atomic(path, text.encode(), protect=protect)


def read_fusion_result(path: str | os.PathLike[str]) -> FusionResult:
    """One fusion_result.json in either form; FuseLensError naming the file (and line) otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise FuseLensError(f"{path}: is a directory, not a fusion_result.json") from None
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise FuseLensError(f"{path}: not UTF-8 text, so not a fusion_result.json") from None
    return parse_fusion_result(text, str(path))


def parse_fusion_result(text: str, source: str = "<fusion_result.json>") -> FusionResult:
    """The graphs of a fusion_result.json text: one JSON object, or several in a row (the old form)."""
    decoder = json.JSONDecoder()
    objects: list[tuple[int, Any]] = []
    pos = _skip(text, 0)
    if pos >= len(text):
        raise FuseLensError(f"{source}: the file is empty")
    while pos < len(text):
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise FuseLensError(f"{source}, line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
        objects.append((pos, value))
        pos = _skip(text, end)
    result = FusionResult(source, CURRENT)
    for start, value in objects:
        where = f"{source}, line {text.count(chr(10), 0, start) + 1}"
        if isinstance(value, dict) and KEY in value:
            result.form = CONCATENATED
            result.graphs.append(_graph(str(value[KEY]), value, where))
        elif isinstance(value, dict) and all(str(k).startswith(f"{KEY}_") for k in value):
            for key, entry in value.items():
                if not isinstance(entry, dict):
                    raise FuseLensError(f"{_line(text, key, where)}: {shown(key)} holds {type(entry).__name__}, "
                                        "not the graph's sections")
                result.graphs.append(_graph(key.removeprefix(f"{KEY}_"), entry, _line(text, key, where)))
        else:
            keys = ", ".join(shown(k) for k in list(value)[:3]) if isinstance(value, dict) else type(value).__name__
            raise FuseLensError(f"{where}: not a fusion_result.json in either form (expected "
                                f"\"{KEY}_<s>_<g>\" keys, or \"{KEY}\" inside each object; found {keys})")
    return result


def _skip(text: str, pos: int) -> int:
    """Past whitespace and a stray comma between the old form's objects."""
    while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
        pos += 1
    return pos


def _line(text: str, key: str, fallback: str) -> str:
    index = text.find(f'"{key}"')
    if index < 0:
        return fallback
    return f"{fallback.rsplit(', line', 1)[0]}, line {text.count(chr(10), 0, index) + 1}"


def _graph(graph: str, entry: Mapping[str, Any], where: str) -> GraphLedger:
    ledger = GraphLedger(graph)
    for section in SECTIONS:
        passes = entry.get(section, {})
        if not isinstance(passes, dict):
            raise FuseLensError(f"{where}: {section} of graph {graph} is {type(passes).__name__}, not an object")
        for name, counts in passes.items():
            if not isinstance(counts, dict):
                raise FuseLensError(f"{where}: {section} > {name} is {type(counts).__name__}, not an object")
            hits = _count(counts, "repository_hit_times", f"{where}: {section} > {name}", required=False)
            ledger.add(PassCount(name, section, _count(counts, "match_times", f"{where}: {section} > {name}"),
                                 _count(counts, "effect_times", f"{where}: {section} > {name}"),
                                 hits if section == UB_FUSION else None))
    return ledger


def _count(counts: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> int:
    value = counts.get(key)
    if value is None:
        if required:
            raise FuseLensError(f"{where}: no {key}")
        return 0
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0 or isinstance(value, bool):
        raise FuseLensError(f"{where}: {key} is {value!r}, not a count")
    return number


# ---- prediction vs toolchain ----------------------------------------------------------------
@dataclass(frozen=True)
class LedgerRow:
    """One pass set against the toolchain: FuseLens's counts, the toolchain's, and the verdict."""

    name: str
    predicted: PassCount | None
    actual: PassCount | None
    status: str  # agree | disagree | unverifiable | not_modelled
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        def counts(c: PassCount | None) -> dict[str, int] | None:
            return None if c is None else {"match_times": c.match_times, "effect_times": c.effect_times}

        return {"pass": self.name, "status": self.status, "predicted": counts(self.predicted),
                "actual": counts(self.actual), "note": self.note}


def compare_ledgers(predicted: GraphLedger, actual: GraphLedger, *, recorded: Iterable[str] = (),
                    unrecorded_notes: Mapping[str, str] | None = None) -> list[LedgerRow]:
    """FuseLens's passes against one toolchain graph, then the toolchain's passes FuseLens does not model.

    A predicted pass found in the toolchain ledger is compared count for count. One that is absent
    counts as 0 / 0 when it is `recorded` (a GE pass name: FE leaves out passes that never
    matched); otherwise nothing can be said from this file, and `unrecorded_notes` says why
    (scope fusion happens in the TF parser, AutoFuse outside FE).
    """
    recorded = set(recorded)
    notes = unrecorded_notes or {}
    rows = []
    for (_, name), mine in predicted.passes.items():
        theirs = actual.get(name)
        if theirs is None and name not in recorded:
            rows.append(LedgerRow(name, mine, None, "unverifiable", notes.get(name, "not in the toolchain's ledger")))
            continue
        got = theirs or PassCount(name, mine.section, 0, 0)
        same = (got.match_times, got.effect_times) == (mine.match_times, mine.effect_times)
        note = "" if same else _difference(mine, got, absent=theirs is None)
        rows.append(LedgerRow(name, mine, theirs, "agree" if same else "disagree", note))
    mine_names = {name for _, name in predicted.passes}
    for (_, name), theirs in actual.passes.items():
        if name not in mine_names:
            rows.append(LedgerRow(name, None, theirs, "not_modelled", "a toolchain pass FuseLens does not model"))
    return rows


def _difference(mine: PassCount, theirs: PassCount, *, absent: bool) -> str:
    parts = []
    if mine.effect_times != theirs.effect_times:
        parts.append(f"FuseLens rewrites {mine.effect_times}, the toolchain {theirs.effect_times}")
    if mine.match_times != theirs.match_times:
        parts.append(f"FuseLens matches {mine.match_times} (near misses included), the toolchain {theirs.match_times}")
    if absent:
        parts.append("the pass is not in the toolchain's ledger (switched off, or it never matched)")
    return "; ".join(parts)

