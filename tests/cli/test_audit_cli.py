"""`fuselens audit`: the three reports (JUnit read back by a JUnit parser, the HTML self-contained), the
baseline gate, plain progress lines off a terminal, Ctrl+C writing what is done."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuselens.cli import main as cli_main
from fuselens.cli.audit_cmd import ProgressBar, _share
from fuselens.session.audit.audit import AuditProgress
from fuselens.session.audit.worker import FAULT_ENV
from tests.browser import chromium, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ["demo", "conv_bn", "conv_bias_bn", "conv_shared", "keras_bn_small_ops", "bert_layernorm"]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """The samples audited once with every report."""
    out = tmp_path_factory.mktemp("audit")
    paths = {kind: out / f"r.{kind}" for kind in ("json", "html", "xml")}
    code = cli_main(["audit", *SAMPLES, "nosuch_model", "-j", "2", "--json", str(paths["json"]),
                     "--html", str(paths["html"]), "--junit", str(paths["xml"])])
    return code, paths


def test_the_json_holds_every_model_with_a_versioned_schema(audited):
    code, paths = audited
    report = json.loads(paths["json"].read_text())
    assert code == 0 and report["format"] == "fuselens-audit" and report["version"] == 1
    assert [row["model"] for row in report["models"]] == [*SAMPLES, "nosuch_model"]
    assert report["models"][-1]["status"] == "unreadable" and "no such file" in report["models"][-1]["reason"]
    assert report["summary"]["table"]["rows"][1]["matches"]["ConvBatchnormFusionPass"] == 1
    assert report["summary"]["reasons"] and all(r["summary"].endswith(("model", "models"))
                                                for r in report["summary"]["reasons"])


def test_the_junit_file_is_read_by_a_junit_parser_one_case_per_model(audited):
    junitparser = pytest.importorskip("junitparser")
    _, paths = audited
    xml = junitparser.JUnitXml.fromfile(str(paths["xml"]))
    (suite,) = list(xml)
    cases = {case.name: case for case in suite}
    assert list(cases) == [*SAMPLES, "nosuch_model"] and suite.tests == len(cases) and suite.failures == 1
    assert cases["demo"].is_passed
    (failure,) = cases["nosuch_model"].result
    assert isinstance(failure, junitparser.Failure) and "no such file" in failure.message


def test_the_html_is_self_contained_and_links_each_reason_to_a_model_section(audited):
    _, paths = audited
    page = paths["html"].read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"<link[^>]+stylesheet", page, re.I) and "@import" not in page
    assert "<style>" in page and "<script>" in page and "<svg" in page  # a near miss's picture, inline
    sections = set(re.findall(r"<section id='([^']+)'", page))
    links = set(re.findall(r"href='#([^']+)'", page))
    assert links and links <= sections and len(sections) == len(SAMPLES) + 1


@needs_chromium
def test_the_html_opens_in_a_headless_browser_and_its_models_table_sorts(audited, tmp_path):
    """The page's own script runs in a browser: a click on the models table's first header sorts by model name
    (down, then up on a second click); the probe script below records the first row after each click."""
    _, paths = audited
    probe = ("<script>var t = Array.from(document.querySelectorAll('table.sortable')).find(function(t){"
             "return t.querySelector('th').textContent === 'model' && !t.classList.contains('heat');});"
             "var th = t.querySelector('th'), seen = [];"
             "[0, 1].forEach(function(){ th.click(); seen.push(t.tBodies[0].rows[0].cells[0].textContent); });"
             "document.body.setAttribute('data-sorted', seen.join(','));</script>")
    page = tmp_path / "probed.html"
    page.write_text(paths["html"].read_text().replace("</body>", probe + "</body>"))
    dom = chromium(page, "--dump-dom")
    assert 'data-sorted="nosuch_model,bert_layernorm"' in dom


def test_switching_a_pass_off_fails_the_gate_naming_the_models_and_the_pass(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    assert cli_main(["audit", *SAMPLES, "-j", "2", "--baseline", str(baseline), "--update-baseline"]) == 0
    assert json.loads(baseline.read_text())["format"] == "fuselens-audit"
    capsys.readouterr()
    assert cli_main(["audit", *SAMPLES, "-j", "2", "--baseline", str(baseline)]) == 0
    assert "0 regressions against the baseline" in capsys.readouterr().out
    junit = tmp_path / "gate.xml"
    assert cli_main(["audit", *SAMPLES, "-j", "2", "--baseline", str(baseline), "--disable",
                     "ConvBatchnormFusionPass", "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    lost = [line.strip() for line in out.splitlines() if "ConvBatchnormFusionPass" in line and "loses" in line]
    assert sorted(line.split(":")[0] for line in lost) == ["conv_bias_bn", "conv_bn", "demo", "keras_bn_small_ops"]
    assert all("(the pass did not run)" in line for line in lost)
    assert "regression: conv_bn: loses 1 of 1 matches of ConvBatchnormFusionPass" in junit.read_text()


def test_bad_options_are_one_line_errors(capsys, tmp_path):
    assert cli_main(["audit", "demo", "--update-baseline"]) == 2
    assert "give --baseline" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli_main(["audit", str(tmp_path / "empty")]) == 2
    assert "no model found in the folder" in capsys.readouterr().err
    (tmp_path / "old.json").write_text("{}")
    assert cli_main(["audit", "demo", "--baseline", str(tmp_path / "old.json")]) == 2
    assert "not a FuseLens audit report" in capsys.readouterr().err


def test_ctrl_c_stops_cleanly_and_writes_what_is_done(tmp_path):
    """A CLI process audits conv_bn, then hangs on conv_shared (the worker's test hook); SIGINT ends it with
    the reports of conv_bn written."""
    report = tmp_path / "r.json"
    marker = f"conv_shared=hang,{tmp_path.name}=none"  # finds this test's worker processes among all others
    env = {**os.environ, "PYTHONPATH": str(ROOT), FAULT_ENV: marker, "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.Popen([sys.executable, "-m", "fuselens", "audit", "conv_bn", "conv_shared", "demo", "-j", "1",
                                "--json", str(report)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # plain progress lines: stderr is not a terminal
        line = process.stderr.readline()
        lines.append(line)
        if line.startswith("audit 1/3: conv_bn ok"):
            break
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, (lines, err)
    assert "interrupted: 1 of 3 models audited" in err and "Traceback" not in err
    data = json.loads(report.read_text())
    assert [row["model"] for row in data["models"]] == ["conv_bn"] and data["complete"] is False
    assert workers_with(f"{FAULT_ENV}={marker}") == []  # the hanging model's worker went with the audit


def workers_with(variable: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and variable.encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_progress_is_one_bar_redrawn_with_the_model_in_flight_and_an_eta():
    stream = Terminal()
    bar = ProgressBar(stream)
    bar.update(AuditProgress(0, 4, {"demo": "fusing"}, 1.0))
    bar.update(AuditProgress(2, 4, {"conv_bn": "comparing"}, 10.0, last={"model": "demo", "status": "ok"}))
    bar.close()
    frames = stream.getvalue().split("\r\x1b[K")
    assert frames[1].startswith("[" + "." * 24 + "] 0/4 demo (fusing)")
    assert frames[2] == "[" + "#" * 12 + "." * 12 + "] 2/4 ETA 10 s conv_bn (comparing)"
    assert frames[-1] == "" and "\n" not in stream.getvalue()


def test_slower_takes_a_percentage_or_a_share():
    assert _share("10%") == pytest.approx(0.1) and _share("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError):
        _share("fast")
