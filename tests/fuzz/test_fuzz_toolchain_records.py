"""The toolchain-log and OM-JSON readers fuzzed as every other reader is (tests/fuzz/harness.py): mutated corpus
files (tests/corpus/logs, tests/corpus/om_json) load or give one FuseLensError line naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import mutators as m
from tests.fuzz.harness import Format, fuzz, fuzz_command_line
from tests.fuzz.test_fuzz import CASES, CLI_CASES, explain

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _seeds(folder: str, pattern: str) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted((CORPUS / folder).glob(pattern))]


def _read_logs(path: Path) -> None:
    from fuselens.core.ascend.toolchain_log import read_toolchain_logs, recognises

    recognises(path.read_bytes()[:65536])
    read_toolchain_logs([path]).to_json()


def _read_om_json(path: Path) -> None:
    from fuselens.core.ascend.om_json import read_om_json, recognises

    recognises(path.read_bytes()[:65536])
    model = read_om_json(path)
    model.to_json()
    model.table()


FORMATS = {f.name: f for f in [
    Format("toolchain_log", lambda work: _seeds("logs", "*.log"),
           m.compose([*m.TEXT_MUTATORS, m.edit_lines, m.edit_lines, m.splice]), _read_logs,
           lambda p, out: ["import-log", str(p)]),
    Format("om_json", lambda work: _seeds("om_json", "*.json"), m.compose([*m.TEXT_MUTATORS, m.json_tree, m.json_tree,
                                                                          m.json_tree]),
           _read_om_json, lambda p, out: ["import-log", str(p)]),
]}


@pytest.mark.parametrize("name", list(FORMATS))
def test_fuzzed_records_load_or_give_one_line(tmp_path, name) -> None:
    report = fuzz(FORMATS[name], CASES, tmp_path)
    assert report.cases == CASES
    assert not report.bugs, explain(report)
    assert report.outcomes["loaded"] > 0 and report.outcomes["error"] > 0, report.outcomes


@pytest.mark.slow
def test_fuzzed_records_on_the_command_line(tmp_path) -> None:
    reports = fuzz_command_line(list(FORMATS.values()), CLI_CASES, tmp_path, seed=1)
    for report in reports.values():
        assert report.cli_cases == CLI_CASES
        assert not report.bugs, explain(report)
