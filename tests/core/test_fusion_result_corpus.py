"""Every shape and quirk of fusion_result.json, as files in tests/corpus/fusion_result/ under the names the
toolchain gives them and under others, each read to the ledger EXPECTED.json gives it, or refused in one line
that says what the file looked like; the same files, mutated, give a ledger or a FuseLensError and nothing
else; and a file of hundreds of graphs lists the few with rewrites first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuselens.core.ascend.ge.fusion_result import (
    CONCATENATED,
    ID_FIELDS,
    LISTED,
    NULL,
    FusionResult,
    parse_fusion_result,
    read_fusion_result,
    recognises,
)
from fuselens.core.errors import FuseLensError
from tests.fuzz import mutators as m
from tests.fuzz.harness import Format, fuzz

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "fusion_result"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text())
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file() and p.name != "EXPECTED.json")


def ledgers(result: FusionResult) -> dict[str, dict[str, str]]:
    """The graphs as EXPECTED.json writes them, most rewrites first."""
    def counts(c):
        return f"{c.match_times}/{c.effect_times}" + ("" if c.repository_hit_times is None else
                                                      f"/{c.repository_hit_times}")
    return {g.graph: {f"{s}/{n}": counts(c) for (s, n), c in g.passes.items()} for g in result.ranked()}


def test_every_corpus_file_has_its_expectation():
    assert sorted(k for k in EXPECTED if not k.startswith("_")) == FILES


@pytest.mark.parametrize("name", [f for f in FILES if "refused" not in EXPECTED[f]])
def test_each_shape_reads_to_its_ledger(name):
    expected = EXPECTED[name]
    expected = EXPECTED.get(expected.get("same_as"), expected)
    path = CORPUS / name
    result = read_fusion_result(path)
    assert recognises(path.read_bytes()[:65536])
    assert result.form == expected["shape"]
    assert ledgers(result) == expected["graphs"]
    assert list(ledgers(result)) == list(expected["graphs"])  # the order: most rewrites first
    merged = expected.get("merged", [])
    assert bool(result.notes) == bool(merged) and all(g in result.notes[0] for g in merged)


@pytest.mark.parametrize("name", [f for f in FILES if "refused" in EXPECTED[f]])
def test_each_refusal_is_one_line_saying_what_the_file_looked_like(name):
    path = CORPUS / name
    assert recognises(path.read_bytes()[:65536]) is EXPECTED[name]["recognised"]
    with pytest.raises(FuseLensError) as caught:
        read_fusion_result(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}{'' if EXPECTED[name]['refused'].startswith('line') else ':'}")
    assert EXPECTED[name]["refused"] in message


@pytest.mark.parametrize("spelling", ["0_11", "session_and_graph_id_0_11", " 00_11 ", "0/11", "11",
                                      "sessionId 0 graphId 11"])
def test_a_graph_is_found_by_any_spelling(spelling):
    result = read_fusion_result(CORPUS / "id_fields" / "fusion_result.json")
    assert result.graph(spelling).key == "session_and_graph_id_0_11"


def test_a_graph_id_in_several_sessions_is_named_not_guessed():
    result = read_fusion_result(CORPUS / "list" / "fusion_result.json")
    assert result.graph("10_11").graph == "10_11"
    with pytest.raises(FuseLensError, match=r"no graph '3' \(graphs: session_and_graph_id_100_100, "):
        result.graph("3")
    keyed = parse_fusion_result(json.dumps({"session_and_graph_id_0_3": {}, "session_and_graph_id_1_3": {}}))
    with pytest.raises(FuseLensError, match=r"graph '3' is in 2 sessions \(0_3, 1_3\); name it as SESSION_GRAPH"):
        keyed.graph("3")


def many_graphs(count: int = 628, fused: tuple[int, ...] = (211, 3, 590)) -> str:
    """A training run's list: `count` graphs, of which those in `fused` rewrote something (graph i: i rewrites)."""
    items = [{"session_and_graph_id": f"0_{i}", **({"graph_fusion": {"ConvBatchnormFusionPass": {
        "effect_times": str(i), "match_times": str(i)}}} if i in fused else {})} for i in range(count)]
    return json.dumps(sorted(items, key=lambda item: item["session_and_graph_id"]), indent=4)


def test_hundreds_of_graphs_list_the_ones_with_rewrites_first():
    result = parse_fusion_result(many_graphs())
    assert result.form == LISTED and len(result.graphs) == 628
    assert [g.graph for g in result.ranked()[:4]] == ["0_590", "0_211", "0_3", "0_0"]
    assert result.busiest().graph == "0_590" and result.graph("590").total_effects() == 590


@pytest.mark.parametrize(("text", "shape", "graphs"), [
    ("null\n", NULL, []), ("[]", LISTED, []), ("{}", "current", []),
    ('{"graphId": 7, "sessionId": 1}', ID_FIELDS, ["1_7"]),  # numbers for ids: read as the strings would be
    ('{"session_and_graph_id": "0_1"},\n{"session_and_graph_id": "0_2"}', CONCATENATED, ["0_1", "0_2"]),
])
def test_edge_shapes(text, shape, graphs):
    result = parse_fusion_result(text)
    assert result.form == shape and [g.graph for g in result.graphs] == graphs


def _read(path: Path) -> None:
    recognises(path.read_bytes()[:65536])
    read_fusion_result(path).to_json()


CORPUS_FORMAT = Format("fusion_result_corpus",
                       lambda work: [(Path(f).name, (CORPUS / f).read_bytes()) for f in FILES],
                       m.compose([*m.TEXT_MUTATORS, *m.BYTE_MUTATORS, m.json_tree, m.json_tree, m.json_tree]), _read)


def test_mutated_corpus_files_give_a_ledger_or_one_line(tmp_path):
    report = fuzz(CORPUS_FORMAT, 300, tmp_path)
    assert not report.bugs, "\n".join(f"case {c}: {what}" for c, what, _ in report.bugs[:5])
    assert report.outcomes["loaded"] > 0 and report.outcomes["error"] > 0, report.outcomes
