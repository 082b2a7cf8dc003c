"""Profiles dropped on the window are told apart by content: a renamed op_statistic shows its per-type
table and chart in the run view; a renamed torch_npu folder opens as one run; a model still opens as a model."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "profiles"


def drop(window, path: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    window.dropEvent(QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier))


def test_a_dropped_renamed_op_statistic_shows_the_per_type_table(qtbot, window, tmp_path):
    path = tmp_path / "stats.dat"
    shutil.copyfile(CORPUS / "op_statistic_0_1_20250109120000.csv", path)
    panel = window.run_panel
    drop(window, path)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    assert window.session.model is None  # imported as a profile, not opened as a model
    view = panel.op_types
    assert panel.tabs.isTabVisible(panel.tabs.indexOf(view)) and panel.tabs.currentWidget() is view
    table = view.table
    rows = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert rows == [["fused", "Conv2D", "AI_CORE", "2", "20.000", "10.000", "10.000", "10.000", "59.259"],
                    ["fused", "AscBackend", "AI_VECTOR_CORE", "2", "8.500", "4.250", "4.250", "4.250", "25.185"],
                    ["fused", "TransData", "AI_VECTOR_CORE", "2", "5.000", "2.500", "2.500", "2.500", "14.815"],
                    ["fused", "Cast", "AI_VECTOR_CORE", "1", "0.250", "0.250", "0.250", "0.250", "0.741"]]
    assert view.labels == ["Conv2D", "AscBackend", "TransData", "Cast"] and view.plot.isVisible()
    panel.top_n.setValue(3)
    assert view.labels == ["Conv2D", "AscBackend", "TransData"] and table.rowCount() == 4
    table.sortItems(3, Qt.SortOrder.AscendingOrder)  # by count, as a number
    assert table.item(0, 1).text() == "Cast"


def test_a_dropped_torch_npu_folder_opens_as_one_run(qtbot, window, tmp_path):
    out = tmp_path / "run" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    for name, new in (("kernel_details.csv", "k.csv"), ("trace_view.json", "t.json"), ("op_statistic.csv", "s")):
        shutil.copyfile(CORPUS / name, out / new)
    panel = window.run_panel
    drop(window, tmp_path / "run")
    qtbot.waitUntil(lambda: panel.result is not None, timeout=20000)
    assert [k.kernel for k in panel.result.graphs["fused"].kernels] == ["aclnnMatmul_MatMulCommon_MatMulV2",
                                                                       "aclnnGelu_GeluAiCore_Gelu"]
    assert not panel.tabs.isTabVisible(panel.tabs.indexOf(panel.op_types))  # kernels, no per-type totals
