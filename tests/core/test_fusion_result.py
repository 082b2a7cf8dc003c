"""fusion_result.json as FE writes it (current form) and as 2019-2020 writers did (objects in a row):
counts as strings, graph and UB fusion, repository hits, several sessions; what is not either form;
writing it back; and the ledger comparison rules."""

from __future__ import annotations

import json

import pytest

from fuselens.core.ascend.ge.fusion_result import (
    CONCATENATED,
    CURRENT,
    GRAPH_FUSION,
    UB_FUSION,
    GraphLedger,
    PassCount,
    compare_ledgers,
    parse_fusion_result,
    read_fusion_result,
    recognises,
    write_fusion_result,
)
from fuselens.core.errors import FuseLensError
from tests.npu_artifacts import fusion_result_text

GRAPHS = {"0_0": {"ConvBatchnormFusionPass": (1, 1), "SoftmaxFusionPass": (3, 2)}, "1_1": {"ZReduceFusionPass": (1, 0)}}
UB = {"0_0": {"TbeConvElemwiseFusionPass": (3, 3, 0)}}


@pytest.mark.parametrize("form", [CURRENT, CONCATENATED])
def test_both_forms_read_to_the_same_ledgers(tmp_path, form):
    path = tmp_path / "fusion_result.json"
    path.write_text(fusion_result_text(GRAPHS, ub=UB, form=form))
    result = read_fusion_result(path)
    assert result.form == form and [g.key for g in result.graphs] == ["session_and_graph_id_0_0",
                                                                       "session_and_graph_id_1_1"]
    first = result.graph("0_0")
    assert first.get("SoftmaxFusionPass") == PassCount("SoftmaxFusionPass", GRAPH_FUSION, 3, 2)
    assert first.get("TbeConvElemwiseFusionPass") == PassCount("TbeConvElemwiseFusionPass", UB_FUSION, 3, 3, 0)
    assert result.graph("session_and_graph_id_1_1").get("ZReduceFusionPass").effect_times == 0
    assert result.busiest() is first and first.total_effects() == 6


def test_written_ledgers_are_fe_shaped_and_read_back(tmp_path):
    ledger = GraphLedger("0_0")
    ledger.add(PassCount("B", GRAPH_FUSION, 2, 1))
    ledger.add(PassCount("A", UB_FUSION, 1, 1, 4))
    path = write_fusion_result(tmp_path / "mine.json", [ledger, GraphLedger("0_1")])
    data = json.loads(path.read_text())
    assert data == {"session_and_graph_id_0_0": {"graph_fusion": {"B": {"effect_times": "1", "match_times": "2"}},
                                                 "ub_fusion": {"A": {"effect_times": "1", "match_times": "1",
                                                                     "repository_hit_times": "4"}}},
                    "session_and_graph_id_0_1": {}}
    assert path.read_text().startswith('{\n    "session_and_graph_id_0_0": {\n        "graph_fusion"')
    assert read_fusion_result(path).graph("0_0").passes == ledger.passes


@pytest.mark.parametrize(("text", "message"), [
    ('{"graphs": []}', r"line 1: an object with keys graphs: not a fusion_result.json \(expected graphs keyed"),
    ('[1, 2]', r"line 1: a JSON list of 2 numbers: not a fusion_result.json \(expected"),
    ('{\n  "session_and_graph_id_0_0": {\n    "graph_fusion": {\n      "P": {"match_times": "x", "effect_times": "1"}',
     r"line 4, column 53: not valid JSON"),
    ('{\n  "session_and_graph_id_0_0": {\n    "graph_fusion": {\n      "P": {"match_times": "two", '
     '"effect_times": "1"}}}}', r"line 2: graph_fusion > P: match_times is 'two', not a count"),
    ('{"session_and_graph_id": "0_0", "graph_fusion": {"P": {"effect_times": "1"}}}',
     r"line 1: graph_fusion > P: no match_times"),
    ("", r"the file is empty"),
])
def test_bad_fusion_results_name_the_file_and_line(text, message):
    with pytest.raises(FuseLensError, match=f"fr.json, {message}" if "line" in message else message):
        parse_fusion_result(text, "fr.json")


def test_an_unknown_graph_is_named_with_the_known_ones():
    result = parse_fusion_result(fusion_result_text(GRAPHS), "fr.json")
    with pytest.raises(FuseLensError, match=r"no graph '9_9' \(graphs: session_and_graph_id_0_0, session_and"):
        result.graph("9_9")


def test_comparison_rules():
    mine = GraphLedger("0_0")
    for name, match, effect in (("ConvBatchnormFusionPass", 2, 1), ("ScopeLayerNormPass", 1, 1),
                                ("NeverMatchedPass", 0, 0), ("RecordedButAbsentPass", 1, 1)):
        mine.add(PassCount(name, GRAPH_FUSION, match, effect))
    theirs = GraphLedger("0_0")
    theirs.add(PassCount("ConvBatchnormFusionPass", GRAPH_FUSION, 2, 1))
    theirs.add(PassCount("TransdataCastFusionPass", GRAPH_FUSION, 4, 4))
    rows = {r.name: r for r in compare_ledgers(mine, theirs, recorded={"NeverMatchedPass", "RecordedButAbsentPass"},
                                               unrecorded_notes={"ScopeLayerNormPass": "parser"})}
    assert rows["ConvBatchnormFusionPass"].status == "agree"
    assert (rows["ScopeLayerNormPass"].status, rows["ScopeLayerNormPass"].note) == ("unverifiable", "parser")
    assert rows["NeverMatchedPass"].status == "agree"  # absent from FE's file = never matched = 0/0
    assert rows["RecordedButAbsentPass"].status == "disagree"
    assert "not in the toolchain's ledger" in rows["RecordedButAbsentPass"].note
    assert rows["TransdataCastFusionPass"].status == "not_modelled"


@pytest.mark.parametrize(("head", "expected"), [
    (b"null", True), (b"\xef\xbb\xbfnull\n", True),
    (b'[{"graph_fusion": {"P": {"effect_times": "1", "match_times": "1"}}, "session_and_graph_id": "0_1"}]', True),
    (b'{"graphId": "11", "sessionId": "0", "ub_fusion": {}}{"graphId": "12"', True),  # cut off by the head
    (b'{\n  "session_and_graph_id_0_0": {}\n}', True),
    (b'{"session_and_graph_id": "0_0"}', True),
    (b'{"Switch": {"GraphFusion": {"ALL": "on"}}}', False),  # a fusion switch file
    (b'[{"name": "Conv2D", "ts": "12.5"}]', False), (b"Op Name,OP Type\n", False), (b"", False),
    (b"nullx", False), (b'"graph_fusion"', False),
    (b'{"sources": {"fusion_result_graph": "session_and_graph_id_0_0"}, "ledger": []}', False),  # a check report
])
def test_recognises_decides_from_the_head_alone(head, expected):
    assert recognises(head) is expected
