"""A run on an Ascend host over SSH, against an sshd the test starts on a loopback port (tests/ssh_host.py)
with the stub toolchain on its far side, and the same flow on "this machine". The two full runs start the
bundle's two TensorFlow side processes each; the fault tests run a small fake driver instead, so they are fast."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.ascend.remote import LOCAL, Host, RemoteError, transport_for
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.remote_run import HostStore, RunHistory, new_record
from tests.npu_artifacts import GE_ONLY_PASS
from tests.sessions.test_npu_check import write_bundle_results
from tests.ssh_host import fake_bundle, sshd_unavailable, write_fake_ascend_host

REASON = sshd_unavailable()
needs_sshd = pytest.mark.skipif(REASON is not None, reason=REASON or "")
pytestmark = pytest.mark.usefixtures("own_fuselens_dirs")

def local_host(tmp_path: Path, name: str = "here", **faults: bool) -> Host:
    """This machine as an Ascend host, with the stub toolchain (and the faults asked for) behind its set-up line."""
    setup = write_fake_ascend_host(tmp_path / "ascend", **faults)
    return Host(name, LOCAL, work_dir=str(tmp_path / "work"), setup=f"source {setup}", python=sys.executable)


def run_on(host: Host, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`fuselens run abs_relu_exp --backend npu --host NAME` (2 steps): its exit code, stdout and stderr."""
    HostStore().put(host)
    code = cli_main(["run", "abs_relu_exp", "--backend", "npu", "--host", host.name, "--steps", "2", "--warmup", "1"])
    out, err = capsys.readouterr()  # (an exception of FuseLens's own would have left cli_main, not returned)
    return code, out, err


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
    host = Host("here", LOCAL, work_dir=str(tmp_path / "work"), setup=f"source {setup}", python=sys.executable)
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
    host = sshd.host("loop", f"source {write_fake_ascend_host(tmp_path / 'ascend')}")
    transport = transport_for(host)
    run = transport.launch(fake_bundle(tmp_path / "slow-bundle", "slow"), "slowrun-cancel")
    cancelled = threading.Event()
    lines: list[str] = []
    outcome: list[int] = []

    def on_line(line: str) -> None:
        lines.append(line)
        cancelled.set()  # cancel as soon as the run says anything

    follower = threading.Thread(target=lambda: outcome.append(transport.follow(run, on_line, cancelled.is_set)))
    follower.start()
    follower.join(30)
    assert outcome == [-1] and lines[0] == "== original: fake"
    assert len(run_group(run.folder)) >= 3  # bash, the driver and its side process still run
    transport.cancel(run)
    assert run_group(run.folder) == []
    assert transport.status(run) == "done cancelled"


@needs_sshd
def test_a_lost_connection_leaves_the_run_going_and_it_can_be_reattached(sshd, tmp_path, monkeypatch):
    host = sshd.host("loop", f"source {write_fake_ascend_host(tmp_path / 'ascend')}; export FAKE_SLEEP=2")
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
    transport = transport_for(local_host(tmp_path))
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


@needs_sshd
def test_a_missing_remote_python_is_worded_before_anything_is_sent(sshd, tmp_path, capsys):
    host = replace(sshd.host("nopython", f"source {write_fake_ascend_host(tmp_path / 'ascend')}"), python="python3.99")
    code, _, err = run_on(host, capsys)
    assert code == 2
    assert "nopython: the remote Python `python3.99` is not found after set_env.sh: set Remote Python" in err
    [record] = RunHistory().all()
    assert record.status == "failed" and "python3.99" in record.message
    assert not Path(host.work_dir, record.id).exists()  # nothing was sent


def test_a_missing_tf_adapter_is_worded_before_anything_is_sent(tmp_path, capsys):
    host = local_host(tmp_path, adapters=False)
    code, _, err = run_on(host, capsys)
    assert code == 2 and "cannot find the TF adapter npu_bridge (mode tf1) after set_env.sh" in err
    assert "tf2-compat (npu_device)" in err  # the other mode is named
    [record] = RunHistory().all()
    assert record.status == "failed" and not Path(host.work_dir, record.id).exists()


def test_a_failing_run_shows_the_tail_of_its_output(tmp_path, capsys):
    code, _, err = run_on(local_host(tmp_path, broken=True), capsys)
    assert code == 2 and "the run on here failed (exit code 1); its output ends:" in err
    assert "aclInit failed (error 507033): the device is not ready" in err  # the adapter's own words
    [record] = RunHistory().all()
    assert record.status == "failed" and not record.results.exists()


@needs_sshd
def test_incomplete_results_name_what_is_missing_and_show_what_arrived(sshd, tmp_path, capsys):
    host = sshd.host("nodumps", f"source {write_fake_ascend_host(tmp_path / 'ascend', dumps=False)}")
    code, out, err = run_on(host, capsys)
    assert code == 3
    assert "results incomplete: original: GE graph dumps" in err and "results incomplete: fused: GE graph dumps" in err
    # what arrived
    assert "Predicted vs actual for abs_relu_exp (evidence: fusion_op, fusion_result, log, profile)" in out
    [record] = RunHistory().all()
    assert record.status == "incomplete" and record.missing == ["original: GE graph dumps", "fused: GE graph dumps"]
    assert not list(record.results.parent.glob(".results.*"))


def test_runs_fetch_refuses_a_run_still_going_and_brings_back_a_finished_one(tmp_path, capsys, load_sample):
    host = local_host(tmp_path)
    HostStore().put(host)
    transport = transport_for(host)
    record = new_record("abs_relu_exp", host, [])
    launched = transport.launch(fake_bundle(tmp_path / "bundle", "slow"), record.id)
    RunHistory().save(replace(record, remote_folder=launched.folder, status="detached"))
    assert cli_main(["runs", "fetch", record.id]) == 2
    assert f"run {record.id} is still running on here: re-attach" in capsys.readouterr().err
    transport.cancel(launched)
    assert cli_main(["runs", "fetch", record.id]) == 2
    assert "was cancelled (its processes were killed); it left no results" in capsys.readouterr().err

    bundle = fake_bundle(tmp_path / "finished", "prepared")  # ended on the host while nobody followed it
    write_bundle_results(bundle / "prepared", run_pipeline(load_sample("abs_relu_exp")), {GE_ONLY_PASS: (2, 2)})
    record = new_record("abs_relu_exp", host, [])
    launched = transport.launch(bundle, record.id)
    RunHistory().save(replace(record, remote_folder=launched.folder, status="detached"))
    deadline = time.monotonic() + 30
    while transport.status(launched) != "done 0" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cli_main(["runs", "fetch", record.id]) == 0
    assert "Predicted vs actual for abs_relu_exp" in capsys.readouterr().out
    assert RunHistory().get(record.id).status == "done" and (record.results / "fused").is_dir()
