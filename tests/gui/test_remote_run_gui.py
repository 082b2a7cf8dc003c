"""The window's "Ascend NPU (host)" backend against the loopback test host (tests/ssh_host.py): the host dialog's
Test connection, a remote run that ends with the imported charts and the predicted-vs-actual report in the
run log, and Cancel, which leaves no process of the run on the host. Each run starts the bundle's two
TensorFlow side processes (behind sshd) and the `fuselens run` child that writes the bundle."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gui.remote_run import REMOTE
from session.remote_run import HostStore, RunHistory
from tests.gui.helpers import open_and_wait
from tests.ssh_host import sshd_unavailable, write_fake_ascend_host

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

    panel.show_result(None)  # reopened from the history: the same results on the open graphs
    panel.remote.reopen(record)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=30000)
    assert set(panel.result.graphs) == {"original", "fused"}


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
