"""A run on an Ascend host over SSH, against an sshd the test starts on a loopback port (tests/ssh_host.py)
with the stub toolchain on its far side, and the same flow on "this machine". The two full runs start the
bundle's two TensorFlow side processes each; the fault tests run a small fake driver instead, so they are fast."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from cli import main as cli_main
from core.runtime.remote import LOCAL, Host, RemoteError, transport_for
from session.remote_run import HostStore, RunHistory
from tests.ssh_host import sshd_unavailable, write_fake_ascend_host

REASON = sshd_unavailable()
needs_sshd = pytest.mark.skipif(REASON is not None, reason=REASON or "")
pytestmark = pytest.mark.usefixtures("own_fuselens_dirs")

FAKE_DRIVER = '''import os, subprocess, sys, time
mode = open("mode").read().strip()
print("== original: fake", flush=True)
if mode == "fail":
    print("Traceback: the adapter refused the graph", file=sys.stderr)
    sys.exit(4)
if mode == "slow":
    subprocess.Popen(["sleep", "300"])  # a side process of the run, as the driver's are
    time.sleep(float(os.environ.get("FAKE_SLEEP", "300")))
os.makedirs("results/original", exist_ok=True)
open("results/original/run.json", "w").write("{}")
print("done: bring back results", flush=True)
'''




def fake_bundle(folder: Path, mode: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "run_on_npu.py").write_text(FAKE_DRIVER)
    (folder / "mode").write_text(mode)
    return folder


def run_group(folder: str) -> list[str]:
    """The processes of a launched run (its process group; the "host" is this machine)."""
    pgid = Path(folder, ".pid").read_text().strip()
    return subprocess.run(["pgrep", "-g", pgid], capture_output=True, text=True).stdout.split()


def full_run(host: Host, capsys: pytest.CaptureFixture[str]) -> str:
    HostStore().put(host)
    code = cli_main(["run", "abs_relu_exp", "--backend", "npu", "--host", host.name, "--steps", "2", "--warmup", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "== fused" in err and "fetching the results" in err  # the driver's lines, streamed
    assert "Predicted vs actual for abs_relu_exp" in out and "predicted fusions" in out
    assert "abs_relu_exp on npu" in out or "original" in out
    [record] = RunHistory().all()
    assert record.status == "done" and record.host == host.name and (record.results / "fused" / "run.json").exists()
    assert not list(record.results.parent.glob(".results.*"))  # the copy went through a temp folder, renamed
    assert cli_main(["runs"]) == 0 and record.id in capsys.readouterr().out
    assert cli_main(["runs", "show", record.id]) == 0  # reopened from the history
    assert "Predicted vs actual for abs_relu_exp" in capsys.readouterr().out
    return out


@needs_sshd
def test_cli_remote_run_over_ssh_ends_with_the_imported_results(sshd, tmp_path, capsys):
    setup = write_fake_ascend_host(tmp_path / "ascend")
    host = sshd.host("loop", f"source {setup}")
    HostStore().put(host)
    assert cli_main(["hosts", "test", "loop"]) == 0
    report = capsys.readouterr().out
    assert "npu_bridge imports" in report and "2 NPU(s)" in report and "FAIL" not in report
    full_run(host, capsys)


def test_this_machine_runs_the_same_flow_without_ssh(tmp_path, capsys):
    setup = write_fake_ascend_host(tmp_path / "ascend")
    host = Host("here", LOCAL, work_dir=str(tmp_path / "work"), setup=f"source {setup}",
                python=__import__("sys").executable)
    assert all(c.ok for c in transport_for(host).test())
    full_run(host, capsys)


@needs_sshd
def test_a_refused_key_and_a_missing_msprof_are_worded(sshd, tmp_path, capsys):
    setup = write_fake_ascend_host(tmp_path / "ascend", msprof=False)
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    HostStore().put(sshd.host("refused", f"source {setup}", key=stranger))
    assert cli_main(["hosts", "test", "refused"]) == 2
    err = capsys.readouterr().err
    assert "authentication refused" in err and "never asks for a password" in err and "Traceback" not in err

    HostStore().put(sshd.host("nomsprof", f"source {setup}"))
    assert cli_main(["hosts", "test", "nomsprof"]) == 1
    assert "msprof not found on PATH after set_env.sh" in capsys.readouterr().out


@needs_sshd
def test_an_unreachable_host_is_worded(sshd, capsys):
    HostStore().put(Host("gone", "nobody@127.0.0.1:1", ssh_options=["ConnectTimeout=3"]))
    assert cli_main(["hosts", "test", "gone"]) == 2
    assert "host unreachable" in capsys.readouterr().err


@needs_sshd
def test_cancel_mid_run_leaves_no_remote_process(sshd, tmp_path):
    host = sshd.host("loop", "")
    transport = transport_for(host)
    run = transport.launch(fake_bundle(tmp_path / "slow-bundle", "slow"), "slowrun-cancel")
    cancelled = threading.Event()
    lines: list[str] = []
    outcome: list[int] = []

    def on_line(line: str) -> None:
        lines.append(line)
        cancelled.set()  # cancel as soon as the run says anything

    follower = threading.Thread(target=lambda: outcome.append(transport.follow(run, on_line, cancelled)))
    follower.start()
    follower.join(30)
    assert outcome == [-1] and lines[0] == "== original: fake"
    assert len(run_group(run.folder)) >= 3  # bash, the driver and its side process still run
    transport.cancel(run)
    assert run_group(run.folder) == []
    assert transport.status(run) == "done cancelled"


@needs_sshd
def test_a_lost_connection_leaves_the_run_going_and_it_can_be_reattached(sshd, tmp_path, monkeypatch):
    host = sshd.host("loop", "export FAKE_SLEEP=2")
    transport = transport_for(host)
    run = transport.launch(fake_bundle(tmp_path / "lost-bundle", "slow"), "lostrun")
    killed: list[int] = []

    def drop_link(line: str) -> None:  # the session's own sshd processes end: the link is gone
        if not killed:
            killed.extend(sshd.session_processes())
            subprocess.run(["kill", *map(str, killed)])

    with pytest.raises(RemoteError) as lost:
        transport.follow(run, drop_link)
    assert lost.value.kind == "lost" and "keeps going" in str(lost.value)
    assert transport.status(run) in ("running", "done 0")  # not killed with the link
    lines: list[str] = []
    assert transport.follow(run, lines.append) == 0  # re-attached: the whole log, then its end
    assert lines[-1] == "done: bring back results"
    transport.cancel(run)  # the driver's side process outlives it; the run's group goes with cancel
    assert run_group(run.folder) == []


def test_a_failed_run_shows_its_stderr_tail_and_incomplete_results_name_what_is_missing(tmp_path):
    host = Host("here", LOCAL, work_dir=str(tmp_path / "work"), setup="")
    transport = transport_for(host)
    run = transport.launch(fake_bundle(tmp_path / "failing", "fail"), "failing")
    assert transport.follow(run, lambda line: None) == 4
    assert "the adapter refused the graph" in transport.log_tail(run)

    run = transport.launch(fake_bundle(tmp_path / "partial", "partial"), "partial")
    assert transport.follow(run, lambda line: None) == 0
    dest, missing = transport.fetch(run, tmp_path / "back" / "results")
    assert (dest / "original" / "run.json").exists()  # what arrived is there
    assert "fused: the whole side (no fused/ folder)" in missing
    assert "original: msprof op_summary" in missing and "original: run.json (step times)" not in missing


def test_a_host_needs_a_valid_address_and_mode():
    with pytest.raises(Exception, match="user@host or user@host:port"):
        Host("x", "a b")
    with pytest.raises(Exception, match="mode"):
        Host("x", LOCAL, mode="tf3")
