"""File > Import toolchain log… in the window: a log and an OM model as JSON set against the open prediction, shown
in the predicted-vs-actual tab with the kind of record behind each row (its From column)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from fuselens.gui.predicted_rows import AGREED, EXTRA, MISSING
from fuselens.gui.predicted_view import COLUMNS
from fuselens.gui.toolchain_records import ToolchainRecords
from tests.gui.helpers import open_and_wait

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NOT_MATCHED = CORPUS / "logs" / "plog-4913_20201105095233.log"
BERT_OM = CORPUS / "om_json" / "bert_layernorm_one_fused.json"
LAYER_NORM = "bert/encoder/layer_0/attention/output/LayerNorm"


def test_the_file_menu_imports_a_log_then_an_om_model(qtbot, window, dialogs, monkeypatch) -> None:
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&File")
    texts = [a.text() for a in file_menu.actions()]
    assert texts.index("Import toolchain log…") == texts.index("Open GE dump folder…") + 1
    open_and_wait(qtbot, window, "bert_layernorm")
    panel = window.run_panel
    records = panel.findChild(ToolchainRecords)
    view = panel.check_view
    tab = panel.tabs.indexOf(view)
    assert not panel.tabs.isTabVisible(tab)

    chosen = [[str(NOT_MATCHED)]]
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", staticmethod(lambda *a, **k: (chosen[0], "")))
    next(a for a in file_menu.actions() if a.text() == "Import toolchain log…").trigger()
    qtbot.waitUntil(lambda: view.report is not None, timeout=20000)
    assert panel.tabs.isTabVisible(tab) and panel.tabs.currentWidget() is view and panel.results.isVisible()
    assert not dialogs
    assert view.model.horizontalHeaderItem(COLUMNS.index("From")).text() == "From"
    shown = view.shown_rows()
    log_row = next(i for i, r in enumerate(shown) if r.kind == "log")
    assert shown[log_row].status == MISSING and view.evidence_kind(log_row) == "log"
    assert "did not match" in shown[log_row].toolchain
    assert "set against the NPU's records (log)" in view.summary.text()

    chosen[0] = [str(BERT_OM)]  # the OM model adds to the log already imported for this prediction
    before = view.report
    next(a for a in file_menu.actions() if a.text() == "Import toolchain log…").trigger()
    qtbot.waitUntil(lambda: view.report is not before, timeout=20000)
    assert records.paths == [str(NOT_MATCHED), str(BERT_OM)]
    assert view.report.summary.evidence == ["log", "om_json"] and "NPU's records (log, OM JSON)" in view.summary.text()
    shown = view.shown_rows()
    first = next(i for i, r in enumerate(shown) if r.node == LAYER_NORM)
    assert view.evidence_kind(first) == "OM JSON, log"  # the OM model shows it fused, the log says no match
    extra = next(i for i, r in enumerate(shown) if r.status == EXTRA)
    assert view.evidence_kind(extra) == "OM JSON"
    autofuse = next(i for i, r in enumerate(shown) if r.pass_id == "AutoFusePass")
    assert shown[autofuse].status == AGREED and view.evidence_kind(autofuse) == "OM JSON"
    view.click_row(autofuse)
    assert window.selection.current.before == {"bert/encoder/layer_0/output/Tanh", "bert/encoder/layer_0/output/add"}


def test_a_file_that_is_no_record_is_one_error_dialog(qtbot, window, dialogs) -> None:
    open_and_wait(qtbot, window, "conv_bn")
    records = window.run_panel.findChild(ToolchainRecords)
    records.import_records([str(CORPUS / "logs" / "not_a_log.csv")])
    qtbot.waitUntil(lambda: bool(dialogs), timeout=20000)
    kind, title, text = dialogs[-1]
    assert (kind, title) == ("critical", "Import toolchain log failed") and "not a toolchain log" in text
    assert "\n" not in text and window.run_panel.check_view.report is None
