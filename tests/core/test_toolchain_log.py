"""The TF adapter's and GE's logs read to their fusion records (tests/corpus/logs, written from the log lines in
GE's scope_pass_registry / scope_pass_manager, FE's graph_fusion and AutoFuse's CanFuse checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuselens.core.ascend.toolchain_log import (
    parse_log_text,
    read_log_file,
    read_toolchain_logs,
    recognises,
)
from fuselens.core.errors import FuseLensError

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "logs"
PLOG_2020 = CORPUS / "plog-4913_20201105095233.log"
PLOG_2023 = CORPUS / "plog-21870_20230412160511123.log"
HOST_FE = CORPUS / "host-0_20240603102001.log"
STDOUT = CORPUS / "atc_stdout.log"


def test_the_2020_registration_form_and_passes_that_did_not_match() -> None:
    log = read_log_file(PLOG_2020)
    assert [(r.name, r.enabled) for r in log.registrations] == [
        ("ScopeLayerNormPass", True), ("ScopeLayerNormGradPass", True), ("ScopeInstanceNormPass", False),
        ("DecodeBboxV2ScopeFusionPass", False)]
    assert [(r.name, r.matched) for r in log.scope_runs] == [("ScopeLayerNormPass", False),
                                                            ("ScopeLayerNormGradPass", False)]
    assert log.scope_runs[0].where == f"{PLOG_2020}:8"
    assert log.lines == 11 and not log.graph_fusion and not log.refusals
    layer_norm = log.scope_pass("ScopeLayerNormPass")
    assert layer_norm is not None
    assert (layer_norm.registered, layer_norm.matched, layer_norm.not_matched) == (True, 0, 1)


def test_the_2023_registration_form_in_a_crlf_file() -> None:
    log = read_log_file(PLOG_2023)
    assert [(r.name, r.enabled) for r in log.registrations] == [
        ("ScopeLayerNormPass", True), ("ScopeInstanceNormPass", False), ("ScopeClipBoxesPass", False)]
    assert [(r.name, r.matched) for r in log.scope_runs] == [("ScopeLayerNormPass", True),
                                                            ("ScopeInstanceNormPass", False)]
    assert all(not r.name.endswith("\r") for r in log.registrations)


def test_fe_graph_fusion_runs_with_their_time_and_autofuse_refusals() -> None:
    log = read_log_file(HOST_FE)
    assert [(r.name, r.time_us) for r in log.graph_fusion] == [
        ("ConvBatchnormFusionPass", 412), ("SoftmaxFusionPass", 37), ("ConvBatchnormFusionPass", 88)]
    assert log.fe_passes() == {"ConvBatchnormFusionPass": (2, 500), "SoftmaxFusionPass": (1, 37)}
    assert [(r.code, r.nodes, r.types) for r in log.refusals] == [
        ("NF1002", ("abs", "exp"), ("Abs", "Exp")), ("NF1021", ("sum", "relu"), ("ReduceSumD", "Relu"))]
    assert log.refusals[0].reason == "it will create cycle after fuse"


def test_lines_without_the_plog_prefix() -> None:
    log = read_log_file(STDOUT)
    assert [(r.name, r.enabled) for r in log.registrations] == [("ScopeLayerNormPass", True)]
    assert [(r.name, r.matched) for r in log.scope_runs] == [("ScopeLayerNormPass", True)]
    assert [(r.name, r.time_us) for r in log.graph_fusion] == [("TbeConvDoubleInFusionPass", 1503)]
    assert [(r.code, r.nodes) for r in log.refusals] == [("NF1010", ("autofuse_pointwise_0_Abs_Relu", "exp_0")),
                                                        ("NF9999", ())]


def test_a_folder_of_logs_reads_every_log_by_content() -> None:
    log = read_toolchain_logs(CORPUS)
    assert len(log.sources) == 4 and not any(s.endswith(".csv") for s in log.sources)
    summary = log.scope_passes()["ScopeLayerNormPass"]
    assert (summary.matched, summary.not_matched) == (2, 1)
    both = read_toolchain_logs([PLOG_2020, PLOG_2023])
    assert both.sources == [str(PLOG_2020), str(PLOG_2023)] and len(both.registrations) == 7


def test_unrelated_and_malformed_lines_give_nothing() -> None:
    text = ("[INFO] GE(1,p):t [a.cc:1]1 F: Register pass name = X, is_enable = maybe.\n"
            "Scope pass X's patterns is matched.\n"  # no [scope_fusion] tag: not the scope manager's line
            "pass_name: Y is [12] micro second\n\n\x00garbage\n")
    log = parse_log_text(text)
    assert log.empty and log.lines == 5


def test_recognises_logs_by_content_not_name() -> None:
    assert recognises(PLOG_2020.read_bytes()[:65536]) and recognises(STDOUT.read_bytes())
    assert not recognises(b"Device_id,OP Type,Core Type,Count\n0,Conv2D,AI_CORE,4\n")
    assert not recognises(b'{"session_and_graph_id_0_0": {}}') and not recognises(b"")


@pytest.mark.parametrize("name, expected", [("not_a_log.csv", "text starting 'Device_id"),
                                            ("missing.log", "cannot read")])
def test_refusals_are_one_line(name: str, expected: str) -> None:
    with pytest.raises(FuseLensError) as e:
        read_log_file(CORPUS / name)
    assert expected in str(e.value) and "\n" not in str(e.value) and str(CORPUS / name) in str(e.value)


def test_a_folder_without_logs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "op_summary.csv").write_text("Op Name,OP Type\n")
    with pytest.raises(FuseLensError, match="holds no toolchain log"):
        read_toolchain_logs(tmp_path)
