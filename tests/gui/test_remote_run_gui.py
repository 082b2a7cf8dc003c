"""The window's "Ascend NPU (host)" backend against the loopback test host (tests/ssh_host.py) and this machine:
the host dialog's Test connection, a remote run that ends with the imported charts and the Predicted vs actual
tab, Cancel, which leaves no process of the run on the host, the worded faults (remote Python or adapter
missing, a failing run, incomplete results), and the run history's Re-attach and Fetch results. Each run
starts the `fuselens run` child that writes the bundle and, once sent, the bundle's TensorFlow side processes;
re-attach and fetch follow a fake driver (tests/ssh_host.py) that brings back a prepared results folder."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fuselens.core.ascend.remote import LOCAL, Host, transport_for
from fuselens.gui.predicted_rows import AGREED
from fuselens.gui.remote_run import REMOTE
from fuselens.session.remote_run import HostStore, RunHistory, new_record
from tests.gui.helpers import open_and_wait
from tests.npu_artifacts import GE_ONLY_PASS
from tests.sessions.test_npu_check import write_bundle_results
from tests.ssh_host import fake_bundle, sshd_unavailable, write_fake_ascend_host

REASON = sshd_unavailable()
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), pytest.mark.usefixtures("own_fuselens_dirs")]
RUN_MS = 180000


@pytest.fixture
def panel(qtbot, window, sshd, tmp_path):
    setup = write_fake_ascend_host(tmp_path / "ascend")
    HostStore().put(sshd.host("loop", f"source {setup}"))
    open_and_wait(qtbot, window, "abs_relu_exp")
    panel = window.run_panel
    panel.remote.reload_hosts("loop")
    panel.backend.setCurrentIndex(panel.backend.findData(REMOTE))
    panel.steps.setValue(2)
    panel.warmup.setValue(1)
    return panel


def test_the_host_dialog_tests_the_connection(qtbot, panel):
    assert panel.remote.host.isVisible() or not panel.isVisible()
    dialog = panel.remote.edit_hosts()
    dialog.hosts.setCurrentIndex(dialog.hosts.findData("loop"))
    assert dialog.edits["address"].text().endswith(f"127.0.0.1:{panel.remote.store.get('loop').address.split(':')[1]}")
    dialog.test_connection()
    qtbot.waitUntil(lambda: dialog.test_button.isEnabled(), timeout=30000)
    text = dialog.checks.toPlainText()
    assert "ready for runs" in text and "2 NPU(s)" in text and "msprof on PATH" in text
    dialog.close()


def test_a_remote_run_from_the_window_shows_the_imported_results(qtbot, panel, dialogs):
    panel.start_run()
    assert panel.running() and panel.progress.maximum() == 100
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    assert not dialogs, dialogs
    result = panel.result
    assert result is not None and set(result.graphs) == {"original", "fused"}
    assert any(k.node for k in result.graphs["fused"].kernels)  # mapped to the open graph's nodes
    log = panel.remote.log.toPlainText()
    assert "== fused" in log and "Predicted vs actual for" in log
    assert "done on loop" in panel.progress_label.text()
    [record] = RunHistory().all()
    assert record.status == "done"
    assert panel.tabs.currentWidget() is panel.check_view
    rows = panel.check_view.shown_rows()
    assert [(r.status, r.pass_id) for r in rows if r.kind == "prediction"] == [(AGREED, "AutoFusePass")]
    # did it pay? The fused side's fusion_op names the AutoFuse kernel's originals; the stub's kernels take 10 us
    [gain] = panel.gains.report.rows
    assert (gain.label, gain.source, gain.matches) == ("autofuse_pointwise_0_Abs_Relu_Exp", "toolchain",
                                                       ("AutoFusePass:exp_0",))
    assert (gain.baseline_us, gain.fused_us, gain.ratio) == (30.0, 10.0, 3.0)
    assert panel.tabs.isTabVisible(panel.tabs.indexOf(panel.gains))

    panel.show_result(None)  # reopened from the history: the same results and view on the open graphs
    panel.show_check(None)
    dialog = panel.remote.choose_run()
    dialog.select(record.id)
    assert dialog.open_button.isEnabled() and not dialog.attach_button.isEnabled()
    dialog.open_button.click()
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    assert set(panel.result.graphs) == {"original", "fused"} and panel.check_view.shown_rows() == rows


def test_cancel_from_the_window_leaves_no_process_on_the_host(qtbot, panel):
    panel.start_run()
    qtbot.waitUntil(lambda: "== original" in panel.remote.log.toPlainText(), timeout=RUN_MS)
    [record] = RunHistory().all()
    pgid = Path(record.remote_folder, ".pid").read_text().strip()
    panel.cancel_run()
    qtbot.waitUntil(lambda: not panel.running(), timeout=30000)
    assert panel.progress_label.text() == "cancelled"
    assert subprocess.run(["pgrep", "-g", pgid], capture_output=True, text=True).stdout.split() == []
    assert RunHistory().get(record.id).status == "cancelled"


def run_from_window(qtbot, panel, host: Host) -> None:
    HostStore().put(host)
    panel.remote.reload_hosts(host.name)
    panel.start_run()
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)


def local_host(tmp_path, name: str = "here", setup: str = "", mode: str = "tf1", **faults: bool) -> Host:
    """This machine as an Ascend host: the stub toolchain (with the faults asked for) behind its set-up line."""
    script = write_fake_ascend_host(tmp_path / "ascend", **faults)
    return Host(name, LOCAL, work_dir=str(tmp_path / "work"), setup=f"source {script}{setup}", python=sys.executable,
                mode=mode)


def test_a_missing_remote_python_is_a_worded_error_in_the_window(qtbot, panel, sshd, tmp_path, dialogs):
    host = replace(sshd.host("nopython", f"source {write_fake_ascend_host(tmp_path / 'ascend')}"), python="python3.99")
    run_from_window(qtbot, panel, host)
    [(_, title, text)] = dialogs
    assert title == "Run failed" and "the remote Python `python3.99` is not found after set_env.sh" in text
    assert panel.progress_label.text() == "failed" and panel.result is None


def test_a_missing_adapter_is_a_worded_error_in_the_window(qtbot, panel, tmp_path, dialogs):
    run_from_window(qtbot, panel, local_host(tmp_path, mode="tf2-compat", adapters=False))
    [(_, title, text)] = dialogs
    assert title == "Run failed"
    assert "cannot find the TF adapter npu_device (mode tf2-compat) after set_env.sh" in text


def test_a_failing_run_shows_its_tail_in_the_window(qtbot, panel, sshd, tmp_path, dialogs):
    run_from_window(qtbot, panel, sshd.host("broken", f"source {write_fake_ascend_host(tmp_path / 'a', broken=True)}"))
    [(_, title, text)] = dialogs
    assert title == "Run failed"
    assert "the run on broken failed (exit code 1); its output ends:" in text
    assert "aclInit failed (error 507033): the device is not ready" in text  # the tail, not just the first line
    assert RunHistory().all()[0].status == "failed"


def test_incomplete_results_are_named_and_what_arrived_is_shown(qtbot, panel, tmp_path, dialogs):
    run_from_window(qtbot, panel, local_host(tmp_path, dumps=False))
    assert not dialogs, dialogs
    assert panel.result is not None and set(panel.result.graphs) == {"original", "fused"}  # what arrived
    assert "results incomplete" in panel.progress_label.text()
    note = panel.check_view.summary.text()
    assert "results incomplete: original: GE graph dumps; fused: GE graph dumps; shown: what arrived" in note
    predicted = [r for r in panel.check_view.shown_rows() if r.kind == "prediction"]
    assert [r.status for r in predicted] == [AGREED] and "dump" not in predicted[0].detail  # profile, fusion_op


def launch_detached(panel, host: Host, tmp_path) -> tuple:
    """A run started on `host` and left there (its connection lost): in the history as detached."""
    HostStore().put(host)
    bundle = fake_bundle(tmp_path / "bundle", "prepared")
    write_bundle_results(bundle / "prepared", panel.session.pipeline, {GE_ONLY_PASS: (2, 2)})
    record = new_record("abs_relu_exp", host, [])
    launched = transport_for(host).launch(bundle, record.id)
    return RunHistory().save(replace(record, remote_folder=launched.folder, status="detached",
                                     message=f"{host.name}: connection lost")), launched


@pytest.mark.parametrize("where", ["ssh", "this machine"])
def test_reattach_from_the_window_follows_the_run_then_shows_its_results(qtbot, panel, sshd, tmp_path, where):
    setup = "; export FAKE_SLEEP=4"
    host = (sshd.host("loop", f"source {write_fake_ascend_host(tmp_path / 'ascend')}{setup}")
            if where == "ssh" else local_host(tmp_path, setup=setup))
    record, _ = launch_detached(panel, host, tmp_path)
    dialog = panel.remote.choose_run()
    dialog.select(record.id)
    assert dialog.table.item(0, 3).text() == "detached" and not dialog.open_button.isEnabled()
    dialog.attach_button.click()
    assert panel.running() and not dialog.isVisible()
    qtbot.waitUntil(lambda: "== original: fake" in panel.remote.log.toPlainText(), timeout=30000)
    assert panel.running()  # following: the run is still going on the host
    qtbot.waitUntil(lambda: not panel.running(), timeout=60000)
    assert "done: bring back results" in panel.remote.log.toPlainText()
    assert panel.result is not None and panel.tabs.isTabVisible(panel.tabs.indexOf(panel.check_view))
    assert RunHistory().get(record.id).status == "done" and record.results.is_dir()
    assert not list(record.results.parent.glob(".results.*"))


def test_fetch_results_from_the_window_brings_back_a_finished_run(qtbot, panel, tmp_path, dialogs):
    host = local_host(tmp_path)
    record, launched = launch_detached(panel, host, tmp_path)
    deadline = time.monotonic() + 30
    while transport_for(host).status(launched) != "done 0" and time.monotonic() < deadline:
        time.sleep(0.1)
    dialog = panel.remote.choose_run()
    dialog.select(record.id)
    dialog.fetch_button.click()
    qtbot.waitUntil(lambda: not panel.running(), timeout=30000)
    assert not dialogs, dialogs
    assert panel.result is not None and RunHistory().get(record.id).status == "done"
    assert "done on here" in panel.progress_label.text()


def test_cancel_while_reattached_kills_the_run_on_the_host(qtbot, panel, tmp_path):
    host = local_host(tmp_path)
    HostStore().put(host)
    record = new_record("abs_relu_exp", host, [])
    launched = transport_for(host).launch(fake_bundle(tmp_path / "slow", "slow"), record.id)
    RunHistory().save(replace(record, remote_folder=launched.folder, status="detached"))
    panel.remote.reattach(RunHistory().get(record.id))
    qtbot.waitUntil(lambda: "== original: fake" in panel.remote.log.toPlainText(), timeout=30000)
    panel.cancel_run()
    qtbot.waitUntil(lambda: not panel.running(), timeout=30000)
    assert panel.progress_label.text() == "cancelled" and RunHistory().get(record.id).status == "cancelled"
    assert transport_for(host).status(launched) == "done cancelled"
    pgid = Path(launched.folder, ".pid").read_text().strip()
    assert subprocess.run(["pgrep", "-g", pgid], capture_output=True, text=True).stdout.split() == []
