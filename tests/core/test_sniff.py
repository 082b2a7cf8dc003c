"""The dispatcher (core/ascend/sniff.py): every file of every corpus under tests/corpus/ is recognised by
exactly the kind it is (by content: names say nothing), and a file FuseLens does not read is refused in
one line saying what it looked like and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuselens.core.ascend import sniff
from fuselens.core.ascend.profile_import import import_run_file
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from tests import npu_artifacts as npu
from tests.core.test_profile_corpus import STATISTICS, TIMED

CORPORA = Path(__file__).resolve().parents[1] / "corpus"
PROFILES = CORPORA / "profiles"
# folder of tests/corpus/ -> the kind of every file in it (files whose name starts `not_` are other kinds)
FOLDER_KINDS = {"fusion_result/concatenated": "fusion_result", "fusion_result/id_fields": "fusion_result",
                "fusion_result/keyed": "fusion_result", "fusion_result/list": "fusion_result",
                "fusion_result/null": "fusion_result", "fusion_result/single": "fusion_result",
                "fusion_result/renamed": "fusion_result", "ge_dumps/current": "ge_dump",
                "ge_dumps/five_digits": "ge_dump", "ge_dumps/no_graph_part": "ge_dump", "logs": "toolchain_log",
                "om_json": "om_json"}


def kinds(head: bytes) -> list[str]:
    return [kind.name for kind in sniff.KINDS if kind.recognises(head)]


def test_every_file_of_every_corpus_is_at_most_one_kind():
    files = [p for p in CORPORA.rglob("*") if p.is_file() and p.suffix != ".py"]
    assert len(files) > 50
    for path in files:
        assert len(kinds(path.read_bytes()[:65536])) <= 1, path


@pytest.mark.parametrize("folder", list(FOLDER_KINDS))
def test_each_corpus_folder_is_its_kind(folder):
    paths = [p for p in sorted((CORPORA / folder).iterdir()) if p.is_file() and not p.name.startswith("not_")]
    assert paths
    for path in paths:
        assert sniff.sniff(path) == FOLDER_KINDS[folder], path


def test_the_dispatcher_tells_every_kind_apart(tmp_path):
    ops = npu.ge_ops(load_model("conv_bn").graph)
    samples = {
        "ge_dump": npu.ge_proto_text(ops).encode(),
        "fusion_result": npu.fusion_result_text({"0_0": {"ConvBatchnormFusionPass": (1, 1)}}).encode(),
        "switch_file": b'{"Switch": {"GraphFusion": {"ALL": "off"}}}\n',
        "om_json": (CORPORA / "om_json" / "resnet_tiny.json").read_bytes(),
        "toolchain_log": (CORPORA / "logs" / "plog-4913_20201105095233.log").read_bytes(),
        "run_file": import_run_file(PROFILES / "op_summary_2023.csv").save(tmp_path / "run.json").read_bytes(),
    }
    samples["line form"] = b"ConvBatchnormFusionPass:off\r\nAutoFusePass:on"  # CRLF, no final newline
    heads = {name: (PROFILES / name).read_bytes() for name in [*TIMED, *STATISTICS]} | samples
    for name, head in heads.items():
        found = kinds(head)
        expected = TIMED[name][0] if name in TIMED else "op_statistic" if name in STATISTICS else \
            "switch_file" if name.startswith("line") else name
        assert found == [expected], name
    assert sniff.kind_of(b"null") == "fusion_result"


@pytest.mark.parametrize(("content", "message"), [
    (b"Foo,Bar\n1,2\n", "a CSV with columns Foo, Bar: not a profile FuseLens reads (expected op_summary, "
                        "op_statistic, task_time, kernel_details or fusion_op columns)"),
    (b"Device_id,API Name,Time(us),Count,Avg(us),Min(us),Max(us),Variance\n0,aclnnAdd,1,1,1,1,1,0\n",
     "a CSV with columns Device_id, API Name, Time(us), Count, Avg(us), Min(us), Max(us), Variance: not a profile"),
    (b"", "an empty file: not a FuseLens run file or a profile"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "binary data (not text): not a FuseLens run file or a profile"),
    (b'{"model": 3}', "a JSON object with keys model: not a FuseLens run file or a profile"),
    (b'[{"a": 1}, {"b": 2}, {"a": 3}]', "a JSON list of 3 objects with keys a, b: not a FuseLens run file"),
    (b"[INFO] GE(1234,python):2020-01-01 boot\n", "a toolchain log (plog / host log), not a FuseLens run file or a "
                                                  "profile (`fuselens import-log` reads it)"),
    (b"notes from the cluster run\nall fine\n", "a text file starting 'notes from the cluster run'"),
    (b'[{"a": 1}, {"b":', "a JSON list that is not valid JSON: not a FuseLens run file or a profile"),
    (b'[{"name": "x", "value": 1},' * 3000, "a JSON list whose first 64 KiB name nothing FuseLens reads"),
    (b'{"Switch": {"GraphFusion": {}}}', "a fusion switch file, not a FuseLens run file or a profile "
                                         "(`fuselens fuse --switch-file` reads it)"),
    (b"null", "a fusion_result.json, not a FuseLens run file or a profile (`fuselens ledger` reads it)"),
])
def test_refusals_are_one_line_saying_what_the_file_looked_like(tmp_path, content, message):
    path = tmp_path / "op_summary_0_1.csv"  # the name promises a profile: only the content counts
    path.write_bytes(content)
    with pytest.raises(FuseLensError) as caught:
        import_run_file(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text
