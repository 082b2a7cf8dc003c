"""GE graph dumps as the toolchain names them (`ge_onnx_00000001_graph_11_Build.pbtxt`, `ge_proto_00000000_Build.txt`
with no graph part, `ge_proto_00056_Build.txt` with 5 digits) and as users rename them, in tests/corpus/ge_dumps/:
each folder scans to its timeline, stages in index order, a renamed file taken by its content; the 58 stage dumps
of one graph that a 2020 host log lists scan, load and diff in order; mutated dumps load or give one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuselens.core.ascend.ge.diff import diff_graphs
from fuselens.core.ascend.ge.dump import GE_ONNX, GE_PROTO, load_dump, recognises, sniff_format
from fuselens.core.ascend.ge.open import open_graph
from fuselens.core.ascend.ge.stages import parse_dump_name, scan_dump_folder
from fuselens.core.errors import FuseLensError
from tests.corpus.ge_stages import FE_FUSION, STAGES_58, write_58_stages
from tests.fuzz import mutators as m
from tests.fuzz.harness import Format, fuzz

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "ge_dumps"
DUMPS = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.parent.name != "renamed"
               and p.name.startswith("ge_")) + [CORPUS / "renamed" / n for n in
                                                ("1_before_fusion.txt", "2_after_fusion.dump", "final.pbtxt")]
NOT_DUMPS = [CORPUS / "renamed" / "notes.txt", CORPUS / "renamed" / "model.pbtxt", CORPUS / "stage_names_58.txt"]
# (process folder, graph id) -> [(index, stage label, formats, nodes, nodes the toolchain fused)]: the conv_bn
# sample as GE writes it before fusion (11 nodes) and after (5, two of them fused).
TIMELINES = {
    ("current", "11"): [("0", "PreRunBegin", [GE_ONNX, GE_PROTO], 11, 0), ("1", "Build", [GE_ONNX], 5, 2)],
    ("five_digits", None): [("55", "PreRunBegin", [GE_ONNX, GE_PROTO], 11, 0), ("56", "Build", [GE_PROTO], 5, 2)],
    ("no_graph_part", None): [("0", "PreRunBegin", [GE_PROTO], 11, 0),
                              ("1", "OptimizeOriginalGraph_FeGraphFusionAfter", [GE_PROTO], 5, 2),
                              ("2", "Build", [GE_PROTO], 5, 2)],
    ("renamed", None): [("-", "1_before_fusion", [GE_PROTO], 11, 0), ("-", "2_after_fusion", [GE_PROTO], 5, 2),
                        ("-", "final", [GE_ONNX], 5, 2)],
}


@pytest.mark.parametrize(("name", "parts"), [
    ("ge_onnx_00000001_graph_11_Build.pbtxt", (GE_ONNX, 1, 8, "11", "Build")),
    ("ge_proto_00000000_Build.txt", (GE_PROTO, 0, 8, None, "Build")),
    ("ge_proto_00056_Build.txt", (GE_PROTO, 56, 5, None, "Build")),
    ("ge_onnx_00007_PreRunBegin.pbtxt", (GE_ONNX, 7, 5, None, "PreRunBegin")),
    ("ge_proto_00000003_graph_2_partition0_rank1_new_sub_graph2.txt",
     (GE_PROTO, 3, 8, "2", "partition0_rank1_new_sub_graph2")),
])
def test_the_three_name_forms(name, parts):
    found = parse_dump_name(name)
    assert (found.format, found.index, found.width, found.graph_id, found.stage) == parts


def test_the_corpus_scans_to_its_timelines_in_index_order():
    folder = scan_dump_folder(CORPUS)
    loads = {id(load.stage): load for load in folder.load_all()}
    got = {}
    for timeline in folder.timelines:
        got[(timeline.process, timeline.graph_id)] = [
            (s.index_label, s.label, sorted(s.files), len(loads[id(s)].dump.graph),
             sum(r.fused for r in loads[id(s)].dump.provenance().values())) for s in timeline.stages]
    assert got == TIMELINES
    assert not folder.skipped


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_each_dump_is_one_by_its_content_whatever_its_name(path):
    head = path.read_bytes()[:65536]
    assert recognises(head)
    assert sniff_format(path) == (GE_ONNX if b'op_type: "ge:' in head else GE_PROTO)
    assert load_dump(path).graph.source == str(path)


@pytest.mark.parametrize("path", NOT_DUMPS, ids=lambda p: p.name)
def test_files_that_are_not_dumps_are_not_taken_for_one(path):
    assert not recognises(path.read_bytes()[:65536]) and sniff_format(path) is None


def test_diff_takes_every_name_form_and_a_renamed_file():
    before, label = open_graph(f"{CORPUS / 'five_digits'}:55")
    after, after_label = open_graph(str(CORPUS / "renamed" / "2_after_fusion.dump"))
    assert (label, after_label) == ("five_digits:PreRunBegin", "2_after_fusion.dump")
    diff = diff_graphs(before, after)
    assert len(diff.of_kind("removed")) == 8 and len(diff.of_kind("added")) == 2
    assert open_graph(f"{CORPUS / 'renamed'}:final")[1] == "renamed:final"
    assert len(open_graph(f"{CORPUS / 'no_graph_part'}:Build")[0]) == 5
    with pytest.raises(FuseLensError, match=r"no stage 'AfterFusion' \(stages: 1_before_fusion, 2_after_fusion, final"):
        open_graph(f"{CORPUS / 'renamed'}:AfterFusion")


def test_58_stages_of_one_graph_scan_load_and_diff_in_order(tmp_path):
    labels = write_58_stages(tmp_path)
    folder = scan_dump_folder(tmp_path)
    [timeline] = folder.timelines
    assert [s.label for s in timeline.stages] == labels and len(labels) == 58
    assert [s.index for s in timeline.stages] == list(range(3, 61))
    assert labels[-14:-11] == ["OptimizeSubGraphAfter#9", "partition1_rank4_new_sub_graph11",
                               "OptimizeSubGraphBefore#10"]
    loads = folder.load_all()
    assert not [load.error for load in loads if load.error]
    assert len(STAGES_58) == 58 and STAGES_58[0] == "PreRunBegin" and STAGES_58[-1] == "PreRunAfterBuild"
    fusion = labels.index(FE_FUSION)
    before, after = loads[fusion - 1].dump.graph, loads[fusion].dump.graph
    assert diff_graphs(before, after).of_kind("added")  # the stage where FE's graph fusion shows
    assert not diff_graphs(after, loads[fusion + 1].dump.graph).changes


def _load(path: Path) -> None:
    recognises(path.read_bytes()[:65536])
    load_dump(path).provenance()


DUMP_FORMAT = Format("ge_dump_corpus", lambda work: [(p.name, p.read_bytes()) for p in DUMPS],
                     m.compose([*m.TEXT_MUTATORS, m.replace_quoted, m.edit_lines, m.truncate]), _load)


def test_mutated_corpus_dumps_load_or_give_one_line(tmp_path):
    report = fuzz(DUMP_FORMAT, 120, tmp_path)
    assert not report.bugs, "\n".join(f"case {c}: {what}" for c, what, _ in report.bugs[:5])
    assert report.outcomes["loaded"] > 0 and report.outcomes["error"] > 0, report.outcomes
