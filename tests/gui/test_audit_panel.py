"""File > Audit folder…: the audit runs in the background and fills the zoo table; a model row opens that
model with the audit's pass configuration; a reason row opens the first model with it, that near miss selected."""

from __future__ import annotations

import shutil

from fuselens.core.formats.samples import sample_path
from fuselens.gui.audit_panel import ROW_ROLE
from fuselens.passes.base import NearMiss
from tests.gui.helpers import WAIT_MS, wait_idle


def test_audit_a_folder_then_open_a_model_and_a_reason(qtbot, window, tmp_path, dialogs):
    for name in ("conv_bn", "conv_shared", "demo", "keras_bn_small_ops"):
        shutil.copy(sample_path(name), tmp_path / f"{name}.pb")
    assert any(a.text() == "Audit folder…" for a in window.menuBar().actions()[0].menu().actions())
    window.set_config(window.session.config.with_pass("AutoFusePass", False))  # the audit takes this one
    tool = window.audit
    tool.start(str(tmp_path))
    qtbot.waitUntil(lambda: tool.panel.report is not None, timeout=WAIT_MS)
    panel = tool.panel
    assert tool.dock.isVisible() and panel.models.rowCount() == 4
    models = [panel.models.item(r, 0).text() for r in range(4)]
    assert models == [f"{tmp_path.name}/{n}.pb" for n in ("conv_bn", "conv_shared", "demo", "keras_bn_small_ops")]
    assert all("AutoFusePass" not in row["passes"] for row in panel.report["models"])

    row = models.index(f"{tmp_path.name}/conv_bn.pb")
    panel.models.cellActivated.emit(row, 0)
    wait_idle(qtbot, window)
    assert window.session.model.path.endswith("conv_bn.pb")
    assert not window.session.config.is_enabled("AutoFusePass")
    assert window.session.pipeline.result("ConvBatchnormFusionPass").matches

    reasons = [panel.reasons.item(r, 0).data(ROW_ROLE) for r in range(panel.reasons.rowCount())]
    assert len(reasons) >= 3 and reasons == panel.report["summary"]["reasons"]  # in the ranked order
    assert [panel.reasons.item(r, 1).text() for r in range(len(reasons))] == [r["title"] for r in reasons]
    read = next(i for i, entry in enumerate(reasons) if entry["kind"] == "intermediate-read")
    panel.reasons.cellActivated.emit(read, 0)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: isinstance(window.selection.current.item, NearMiss), timeout=WAIT_MS)
    assert window.session.model.path.endswith(reasons[read]["first"]["model"].split("/")[-1])
    assert window.selection.current.item.anchor == reasons[read]["first"]["anchor"]
    assert not dialogs
