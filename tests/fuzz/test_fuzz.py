"""A few hundred fuzzed inputs per format through every loader and importer, and one per format
through the command line (the benchmark runs >= 1,000 per format: benchmarks/bench_fuzz.py).

A case passes when it loads or gives the one-line FuseLensError naming its input; the command line
must exit 0 or 2 with at most three lines on stderr and leave whole outputs or none. Bugs already
reproduced by a strict xfail test (harness.KNOWN_BUGS, in files owned elsewhere) are listed, not failed.
"""

from __future__ import annotations

import pytest

from tests.fuzz.harness import FORMATS, Report, fuzz, fuzz_command_line

CASES = 200
CLI_CASES = 1  # per format: a fused case imports TensorFlow in its process (~5 s)


def explain(report: Report) -> str:
    return "\n".join(f"case {case}: {what}\n  replay: {path}" for case, what, path in report.bugs[:5])


@pytest.mark.parametrize("name", list(FORMATS))
def test_fuzzed_inputs_load_or_give_one_line(tmp_path, name) -> None:
    report = fuzz(FORMATS[name], CASES, tmp_path)
    assert report.cases == CASES
    assert not report.bugs, explain(report)
    if name != "graphdef_bytes":  # random bytes rarely leave a GraphDef: every other format gets past its parser
        assert report.outcomes["loaded"] > 0 and report.outcomes["error"] > 0, report.outcomes


@pytest.mark.slow
def test_fuzzed_inputs_on_the_command_line(tmp_path) -> None:
    reports = fuzz_command_line(list(FORMATS.values()), CLI_CASES, tmp_path, seed=1)
    for report in reports.values():
        assert report.cli_cases == CLI_CASES
        assert not report.bugs, explain(report)
