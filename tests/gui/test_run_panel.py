"""The run panel: a real run of abs_relu_exp from the window, cancel (the child is killed), a failing
run (an error, the window lives on), the backend chooser, an op_summary import mapped to the fused
node, and the NPU script export. Each real run starts a child that imports TensorFlow (~5 s)."""

from __future__ import annotations

import json
import os

import pytest
from PySide6.QtCore import Qt

from fuselens.core.devices.backends import BackendStatus
from fuselens.gui.run_panel import BACKEND_PROBE, DOCK_TITLE
from tests.core.test_run_view import write_op_summary
from tests.gui.helpers import open_and_wait

SAMPLE = "abs_relu_exp"
FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"
RUN_MS = 120000


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def panel(qtbot, window):
    open_and_wait(qtbot, window, SAMPLE)
    return window.run_panel


def test_the_dock_menu_and_toolbar_are_there(window):
    panel = window.run_panel
    dock = panel.parentWidget()
    assert dock.windowTitle() == DOCK_TITLE and window.dockWidgetArea(dock) == Qt.DockWidgetArea.BottomDockWidgetArea
    menus = {a.text(): a.menu() for a in window.menuBar().actions()}
    texts = [a.text() for a in menus["&Run"].actions() if a.text()]
    for wanted in ("Compile and run", "Cancel run", "Import profile file…", "Import PROF_* folder…",
                   "Export Chrome trace…", "Export charts (PNG)…", "Export NPU run script…", "Heat overlay",
                   "NPU runs (history)…"):
        assert wanted in texts
    assert not panel.files.result_actions[0].isEnabled()  # nothing to export before a run
    assert panel.results.isHidden() and "no run yet" in panel.progress_label.text()  # the dock is just its controls
    assert not panel.cancel_button.isEnabled() and panel.progress.isHidden() and panel.run_button.isEnabled()


def test_run_on_cpu_shows_the_fused_kernel_after_and_elementwise_kernels_before(qtbot, panel):
    panel.steps.setValue(3)
    panel.warmup.setValue(1)
    seen = []
    panel.run_progress.connect(seen.append)
    qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    assert panel.running() and not panel.run_button.isEnabled() and panel.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    assert panel.result is not None and panel.result.backend == "cpu" and panel.result.steps == 3
    after = panel.charts.shown_kernels("after")
    assert [(k.kernel, k.node, k.pass_id) for k in after] == [(FUSED, FUSED, "AutoFusePass")]
    before = panel.charts.shown_kernels("before")
    assert {k.op_type for k in before} <= {"Abs", "Relu", "Exp", "_UnaryOpsComposition"} and len(before) >= 2
    assert panel.result.allclose is True
    phases = {(p.graph, p.phase) for p in seen}
    assert {("original", "run"), ("fused", "run")} <= phases  # progress names the graph and the step
    assert any(p.total == 3 and p.step == 3 for p in seen)
    assert panel.progress_label.text().startswith("done") and panel.files.result_actions[0].isEnabled()
    assert not panel.results.isHidden()


def test_cancel_kills_the_child_and_the_panel_is_ready_again(qtbot, panel):
    panel.steps.setValue(100000)
    panel.start_run()
    qtbot.waitUntil(lambda: panel.handle is not None and panel.handle.pid is not None, timeout=RUN_MS)
    pid = panel.handle.pid
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    assert not alive(pid)
    assert panel.progress_label.text() == "cancelled" and panel.run_button.isEnabled()
    assert panel.result is None and panel.window().is_idle()


def test_a_failing_run_shows_an_error_and_the_window_stays(qtbot, panel, dialogs):
    panel.timeout_s = 0.5  # the child cannot even import TensorFlow in that time
    failures = []
    panel.run_failed.connect(failures.append)
    panel.start_run()
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    assert failures and "timed out" in failures[0]
    assert ("critical", "Run failed", failures[0]) in dialogs
    assert panel.window().isVisible() and panel.run_button.isEnabled() and panel.progress_label.text() == "failed"
    panel.shapes.setText("data1=oops")  # bad input fails before any process starts
    panel.start_run()
    assert not panel.running() and "NAME=D1,D2" in dialogs[-1][2]


def test_running_without_a_model_says_so(window, dialogs):
    window.run_panel.start_run()
    assert dialogs and dialogs[-1][1] == "Run failed" and "open a model first" in dialogs[-1][2]


def test_backend_chooser_disables_what_is_missing_with_the_reason(qtbot, window):
    panel = window.run_panel
    panel.set_backends([BackendStatus("cpu", True, "TensorFlow on the host"),
                        BackendStatus("gpu", False, "TensorFlow sees no GPU"),
                        BackendStatus("npu", True, "npu_bridge imports")])
    assert panel.backend_status("gpu") == (False, "not available: TensorFlow sees no GPU")
    assert panel.backend_status("npu") == (True, "npu_bridge imports")
    panel.backend.setCurrentIndex(panel.backend.findData("gpu"))
    panel.set_backends([BackendStatus("gpu", False, "TensorFlow sees no GPU")])
    assert panel.backend.currentData() == "cpu"  # a chosen backend that went away falls back to CPU
    qtbot.waitUntil(lambda: BACKEND_PROBE.statuses is not None, timeout=RUN_MS)  # the real check, in a child
    fresh = type(panel)(window.session, window.selection, window.workers, window.statusBar(),
                       {s: p.view for s, p in window.panes.items()}, window)
    real = {s.name: s for s in BACKEND_PROBE.statuses}
    for name, status in real.items():
        assert fresh.backend_status(name)[0] == status.available and status.reason in fresh.backend_status(name)[1]


def test_imported_op_summary_is_charted_on_the_fused_graph(qtbot, panel, tmp_path):
    path = tmp_path / "op_summary_0_1_1.csv"
    write_op_summary(path, [("trans_Cast_0", "Cast", 2.0), (FUSED, "AscBackend", 4.25)], steps=5)
    panel.files.import_profile(str(path))
    qtbot.waitUntil(lambda: panel.result is not None)
    assert panel.charts.shown_kernels("before") == []
    after = {k.kernel: k for k in panel.charts.shown_kernels("after")}
    assert (after[FUSED].node, after[FUSED].count, after[FUSED].mean_us) == (FUSED, 5, 4.25)
    assert after["trans_Cast_0"].node is None
    panel.select_kernel("after", after[FUSED])
    assert panel.window().selection.current.after == {FUSED}
    assert "2 kernels, 1 mapped" in panel.window().statusBar().currentMessage()


def test_a_bad_profile_is_an_error_not_a_crash(qtbot, panel, tmp_path, dialogs):
    path = tmp_path / "op_summary_0_1_1.csv"
    path.write_text("not,a,profile\n1,2,3\n")
    panel.files.import_profile(str(path))
    qtbot.waitUntil(lambda: bool(dialogs))
    assert dialogs[-1][1] == "Import failed" and str(path) in dialogs[-1][2] and panel.result is None


def test_npu_bundle_export_is_written_by_the_tensorflow_helper(qtbot, panel, tmp_path, monkeypatch):
    """The same bundle as `fuselens export-npu-script`; its graphs are stripped with TensorFlow, so the
    window's helper writes it (doing it in this process would fail here), in a worker: the call returns at once."""
    from fuselens.core.ascend import npu_bundle

    def not_here(*args, **kwargs):
        raise AssertionError("the window's own process stripped a graph with TensorFlow")

    monkeypatch.setattr(npu_bundle, "for_target", not_here)
    with qtbot.waitSignal(panel.files.bundle_written, timeout=RUN_MS) as written:
        panel.files.export_npu_script(str(tmp_path / "npu_bundle"), "tf2-compat")
        assert panel.window().workers.busy()  # returned while the helper writes
    report = written.args[0]
    assert "NPU bundle written to" in panel.window().statusBar().currentMessage()
    spec = json.loads((report.folder / "bundle.json").read_text())
    assert spec["model"] == "abs_relu_exp" and spec["mode"] == "tf2-compat"
    assert spec["sides"]["fused"]["autofuse_flags"] == "--enable_autofuse=true"
    assert spec["import_command"] == "fuselens import-profile {results} --model abs_relu_exp"
    assert (report.folder / "run_on_npu.py").exists() and report.folder.name == "npu_bundle"


def test_an_imported_npu_run_shows_predicted_vs_actual_and_a_row_selects_its_nodes(qtbot, window, tmp_path, dialogs):
    """A bundle's results folder: the tab appears with a row per prediction, AMCT's fold agreed as done before
    GE, a filter by status, and a click selecting the row's nodes in both panes; another model hides the tab."""
    from fuselens.gui.predicted_rows import AGREED, EXTRA
    from tests.npu_artifacts import GE_ONLY_PASS
    from tests.sessions.test_npu_check import write_bundle_results

    open_and_wait(qtbot, window, "conv_bn")
    panel = window.run_panel
    tab = panel.tabs.indexOf(panel.check_view)
    assert not panel.tabs.isTabVisible(tab)
    results = write_bundle_results(tmp_path / "results", window.session.pipeline, {GE_ONLY_PASS: (2, 2)})
    panel.files.import_profile(str(results))
    qtbot.waitUntil(lambda: panel.result is not None)
    assert panel.tabs.isTabVisible(tab) and not dialogs
    view = panel.check_view
    rows = view.shown_rows()
    folds = [r for r in rows if r.pass_id == "ConvBatchnormFusionPass"]
    assert [r.status for r in folds] == [AGREED, AGREED] and "done by AMCT before GE" in folds[1].detail
    assert view.summary.text().startswith("conv_bn: 2 predicted fusions set against the NPU's records")

    view.set_status_filter(EXTRA)
    assert [(r.status, r.pass_id) for r in view.shown_rows()] == [(EXTRA, GE_ONLY_PASS)]
    assert view.status_filter.currentText() == "extra on device (1)"
    view.set_status_filter(None)
    view.click_row(view.shown_rows().index(folds[0]))
    assert window.selection.current.before == {"conv1", "bn1"} and "conv1" in window.selection.current.after

    open_and_wait(qtbot, window, SAMPLE)
    assert not panel.tabs.isTabVisible(tab) and view.shown_rows() == []
