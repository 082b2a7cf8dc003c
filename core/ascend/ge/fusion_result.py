"""fusion_result.json: the toolchain's ledger of what each fusion pass matched and rewrote, per graph.

FE writes it at the end of compilation: per graph, `graph_fusion` and `ub_fusion` sections of
`pass -> {match_times, effect_times}` (UB passes may add `repository_hit_times`); every count is a
string, a pass that never matched is absent, and a graph may have either section, both or none.
Five top-level shapes are in use, all read here into one ledger per graph:

- objects back to back (`{...}{...}`, not one JSON document), each with `"sessionId"` and `"graphId"`;
- back to back, or one object, each with a `"session_and_graph_id": "0_11"` field;
- a JSON list of such objects (most files of 2024-2026; hundreds of graphs in a training run);
- one object keyed `"session_and_graph_id_0_11"` per graph (CANN 8.0 on);
- the literal `null`: a run that compiled nothing, an empty ledger.

Whatever the spelling ("0_11", sessionId "0" + graphId "11", "session_and_graph_id_0_11"), a graph is
`0_11` here, and a graph named twice is one ledger. `match_times` counts structural pattern matches,
`effect_times` the matches whose rewrite went through; a match that was not effected is what FuseLens
calls a near miss. FuseLens writes its own prediction in the keyed shape (`passes/ledger.py`), and
`compare_ledgers` sets the two side by side.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import read_text, write_bytes_atomic
from fuselens.core.wording import shown

GRAPH_FUSION = "graph_fusion"
UB_FUSION = "ub_fusion"
SECTIONS = (GRAPH_FUSION, UB_FUSION)
KEY = "session_and_graph_id"
SESSION_ID, GRAPH_ID = "sessionId", "graphId"
# A key only fusion_result.json has, any one of which in a file's head marks it (the 2021-2022 form's ids
# included); as a key, followed by its colon: a report that names a graph in a value is not one.
_MARKER = re.compile(rb'"(?:graph_fusion|ub_fusion|sessionId|session_and_graph_id(?:_\d+_\d+)?)"\s*:')
CURRENT = "current"  # {"session_and_graph_id_0_0": {...}, ...}
CONCATENATED = "concatenated"  # {"session_and_graph_id": "0_0", ...}{"session_and_graph_id": "0_1", ...}
ID_FIELDS = "id fields"  # {"graphId": "11", "sessionId": "0", ...}{...}
LISTED = "list"  # [{"session_and_graph_id": "0_0", ...}, ...]
NULL = "null"  # null: nothing compiled
SHAPES = (ID_FIELDS, CONCATENATED, LISTED, CURRENT, NULL)
EXPECTED = (f"expected graphs keyed \"{KEY}_<s>_<g>\", or objects with a \"{KEY}\" field or \"{SESSION_ID}\" "
            f"and \"{GRAPH_ID}\" fields (one, several in a row, or a JSON list of them), or null")
_ID_PARTS = re.compile(r"^\D*?(\d+)\D+?(\d+)\D*$")


@dataclass(frozen=True)
class PassCount:
    """One pass's counts in one graph."""

    name: str
    section: str  # graph_fusion | ub_fusion
    match_times: int
    effect_times: int
    repository_hit_times: int | None = None  # ub_fusion only, and not in every writer's entries

    def to_json(self) -> dict[str, str]:
        """FE's spelling: every count a string, keys in FE's (sorted) order; repository hits where known."""
        out = {"effect_times": str(self.effect_times), "match_times": str(self.match_times)}
        if self.section == UB_FUSION and self.repository_hit_times is not None:
            out["repository_hit_times"] = str(self.repository_hit_times)
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

    def total_matches(self) -> int:
        return sum(p.match_times for p in self.passes.values())

    def merge(self, count: PassCount) -> None:
        """Add a pass's counts; a pass already here (the graph named twice in one file) has them added."""
        known = self.passes.get((count.section, count.name))
        if known is None:
            self.add(count)
            return
        hits = None if known.repository_hit_times is None and count.repository_hit_times is None else \
            (known.repository_hit_times or 0) + (count.repository_hit_times or 0)
        self.add(PassCount(count.name, count.section, known.match_times + count.match_times,
                           known.effect_times + count.effect_times, hits))

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
    form: str  # one of SHAPES
    graphs: list[GraphLedger] = field(default_factory=list)

    notes: list[str] = field(default_factory=list)

    def graph(self, key: str) -> GraphLedger:
        """A graph by any spelling of its id: `0_11`, `session_and_graph_id_0_11`, `0/11`, or `11` alone when
        one session has a graph 11."""
        wanted = graph_id(key)
        found = [g for g in self.graphs if g.graph == wanted]
        if not found and wanted.isdigit():
            found = [g for g in self.graphs if g.graph.rpartition("_")[2] == wanted]
        if len(found) == 1:
            return found[0]
        if found:
            raise FuseLensError(f"{self.source}: graph {key!r} is in {len(found)} sessions "
                                f"({', '.join(g.graph for g in found[:8])}); name it as SESSION_GRAPH")
        known = ", ".join(g.key for g in self.ranked()[:12]) or "none"
        more = f" and {len(self.graphs) - 12} more" if len(self.graphs) > 12 else ""
        raise FuseLensError(f"{self.source}: no graph {key!r} (graphs: {known}{more})")

    def busiest(self) -> GraphLedger | None:
        """The graph with the most rewrites: the model's own graph, as a rule (others are init graphs)."""
        return max(self.graphs, key=lambda g: (g.total_effects(), len(g.passes)), default=None)

    def ranked(self) -> list[GraphLedger]:
        """The graphs with the most rewrites first (then the most matches, then file order): in a file of
        hundreds of graphs, the few that fused anything."""
        order = {id(g): i for i, g in enumerate(self.graphs)}
        return sorted(self.graphs, key=lambda g: (-g.total_effects(), -g.total_matches(), order[id(g)]))

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
    return text[:1] in (b"{", b"[") and _MARKER.search(text) is not None


def write_fusion_result(path: str | os.PathLike[str], graphs: Iterable[GraphLedger], *,
                        protect: str | None = None) -> Path:
    """Write ledgers as a fusion_result.json (current form, 4-space indent as FE writes it), atomically."""
    text = json.dumps(fusion_result_json(graphs), indent=4, sort_keys=True) + "\n"
    return write_bytes_atomic(path, text.encode(), protect=protect)


def graph_id(spelling: object) -> str:
    """A graph id as `S_G`, whatever its spelling: "0_11", "session_and_graph_id_0_11", "00_11", "0/11"
    (a spelling with no two numbers in it is kept as written, stripped)."""
    text = str(spelling).strip().removeprefix(KEY).lstrip("_")
    parts = _ID_PARTS.match(text)
    return f"{int(parts.group(1))}_{int(parts.group(2))}" if parts else text


def read_fusion_result(path: str | os.PathLike[str]) -> FusionResult:
    """One fusion_result.json in any of its shapes; FuseLensError naming the file (and line) otherwise."""
    path = Path(path)
    return parse_fusion_result(read_text(path, "a fusion_result.json", encoding="utf-8-sig"), str(path))


def parse_fusion_result(text: str, source: str = "<fusion_result.json>") -> FusionResult:
    """The graphs of a fusion_result.json text, one ledger per graph, in the order the file names them."""
    decoder = json.JSONDecoder()
    values: list[tuple[int, Any]] = []
    pos = _skip(text, 0)
    if pos >= len(text):
        raise FuseLensError(f"{source}: the file is empty")
    while pos < len(text):
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            if not values and e.pos == pos:
                raise FuseLensError(f"{source}: starts with {text[pos:pos + 24]!r}, not JSON: not a "
                                    f"fusion_result.json ({EXPECTED})") from None
            raise FuseLensError(f"{source}, line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise FuseLensError(f"{source}: JSON nested too deep to be a fusion_result.json") from None
        values.append((pos, value))
        pos = _skip(text, end)
    result = FusionResult(source, _shape(values[0][1]))
    ledgers: dict[str, GraphLedger] = {}
    repeated: list[str] = []
    lines = _Lines(text)
    for start, value in values:
        where = f"{source}, line {lines.at(start)}"
        for name, entry, at in _graph_entries(value, text, start, where, lines):
            graph = graph_id(name)
            if graph in ledgers:
                repeated.append(graph)
            else:
                ledgers[graph] = GraphLedger(graph)
                result.graphs.append(ledgers[graph])
            for count in _counts(graph, entry, at):
                ledgers[graph].merge(count)
    repeated = list(dict.fromkeys(repeated))
    if repeated:
        result.notes.append(f"{len(repeated)} graph{'s are' if len(repeated) != 1 else ' is'} named in more than "
                            f"one entry ({', '.join(repeated[:6])}); their counts were added up")
    return result


def _shape(value: Any) -> str:
    if value is None:
        return NULL
    if isinstance(value, list):
        return LISTED
    if isinstance(value, dict) and KEY not in value and (SESSION_ID in value or GRAPH_ID in value):
        return ID_FIELDS
    return CONCATENATED if isinstance(value, dict) and KEY in value else CURRENT


class _Lines:
    """Line numbers of positions asked for in increasing order, counted once over the text (a file of
    hundreds of graphs would otherwise be counted from its start for each)."""

    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        if pos < self.pos:
            return self.text.count("\n", 0, pos) + 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _graph_entries(value: Any, text: str, start: int, where: str,
                   lines: _Lines) -> list[tuple[str, dict[str, Any], str]]:
    """(graph id as spelled, its sections, where it is) for each graph of one top-level JSON value."""
    if value is None:
        return []
    if isinstance(value, dict) and (named := _graph_name(value, where)) is not None:
        return [(named, value, where)]
    if isinstance(value, dict) and all(str(k).startswith(f"{KEY}_") for k in value):
        entries = []
        at = start
        for key, entry in value.items():
            at = max(text.find(f'"{key}"', at), at)
            line = f"{where.rsplit(', line', 1)[0]}, line {lines.at(at)}"
            if not isinstance(entry, dict):
                raise FuseLensError(f"{line}: {shown(key)} holds {_kind(entry)}, not the graph's sections")
            entries.append((key, entry, line))
        return entries
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        entries = []
        for i, item in enumerate(value, 1):
            named = _graph_name(item, f"{where}, item {i} of the list")
            if named is None:
                if not any(s in v for v in value for s in SECTIONS):
                    raise FuseLensError(f"{where}: a JSON list of {len(value)} object{'s' if len(value) != 1 else ''} "
                                        f"without {GRAPH_FUSION} or {UB_FUSION} keys: not a fusion_result.json "
                                        f"({EXPECTED})")
                raise FuseLensError(f"{where}, item {i} of the list: {_looks(item)} and no \"{KEY}\" or "
                                    f"\"{SESSION_ID}\" / \"{GRAPH_ID}\" field: not a graph of a fusion_result.json")
            entries.append((named, item, f"{where}, item {i} of the list"))
        return entries
    raise FuseLensError(f"{where}: {_looks(value)}: not a fusion_result.json ({EXPECTED})")


def _graph_name(entry: dict[str, Any], where: str) -> str | None:
    """The graph id an object carries in its fields, or None when it carries none."""
    if KEY in entry:
        return _id_text(entry[KEY], KEY, where)
    if SESSION_ID in entry or GRAPH_ID in entry:
        missing = GRAPH_ID if SESSION_ID in entry else SESSION_ID
        if missing not in entry:
            raise FuseLensError(f"{where}: an object with \"{SESSION_ID if missing == GRAPH_ID else GRAPH_ID}\" "
                                f"and no \"{missing}\": cannot tell which graph it counts")
        return f"{_id_text(entry[SESSION_ID], SESSION_ID, where)}_{_id_text(entry[GRAPH_ID], GRAPH_ID, where)}"
    return None


def _id_text(value: Any, key: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise FuseLensError(f"{where}: \"{key}\" is {shown(json.dumps(value))}, not a graph id")
    return str(value).strip()


def _looks(value: Any) -> str:
    """What a JSON value looks like, for a refusal: "an object with keys a, b, c", "a JSON list of 3 numbers"."""
    if isinstance(value, dict):
        if not value:
            return "an empty object"
        keys = ", ".join(shown(k) for k in list(value)[:4]) + (f" and {len(value) - 4} more" if len(value) > 4 else "")
        return f"an object with keys {keys}"
    if isinstance(value, list):
        kinds = sorted({_kind(v) for v in value})
        plural = {"object": "objects", "list": "lists", "string": "strings", "number": "numbers",
                  "true or false": "true or false values", "null": "nulls"}
        if not value:
            return "an empty JSON list"
        return f"a JSON list of {len(value)} " + " and ".join(
            plural[k] if len(value) != 1 else k for k in kinds)
    return f"a JSON {_kind(value)}"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "true or false"
    return "null" if value is None else "number"


def _skip(text: str, pos: int) -> int:
    """Past whitespace and a stray comma between back-to-back objects."""
    while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
        pos += 1
    return pos


def _counts(graph: str, entry: Mapping[str, Any], where: str) -> list[PassCount]:
    counts = []
    for section in SECTIONS:
        passes = entry.get(section)
        if passes is None:
            continue
        if not isinstance(passes, dict):
            raise FuseLensError(f"{where}: {section} of graph {graph} is {_kind(passes)}, not an object")
        for name, numbers in passes.items():
            if not isinstance(numbers, dict):
                raise FuseLensError(f"{where}: {section} > {shown(name)} is {_kind(numbers)}, not an object")
            at = f"{where}: {section} > {shown(name)}"
            hits = _count(numbers, "repository_hit_times", at) if "repository_hit_times" in numbers else None
            counts.append(PassCount(name, section, _count(numbers, "match_times", at),
                                    _count(numbers, "effect_times", at), hits if section == UB_FUSION else None))
    return counts


def _count(counts: Mapping[str, Any], key: str, where: str) -> int:
    value = counts.get(key)
    if value is None:
        raise FuseLensError(f"{where}: no {key}")
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0 or isinstance(value, (bool, dict, list, float)):
        raise FuseLensError(f"{where}: {key} is {shown(repr(value)[:40])}, not a count")
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

