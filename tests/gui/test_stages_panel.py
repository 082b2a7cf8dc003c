"""The toolchain-stages dock: a dump folder's stages in order, any two side by side with diff colours,
the changes grouped by the pass GE credits, synced selection through _datadump_original_op_names."""

from __future__ import annotations

import statistics
import time

from fuselens.core.formats.loaders import load_model
from fuselens.passes.pipeline import run_pipeline
from fuselens.session import Stage
from tests.corpus.ge_stages import FE_FUSION, write_58_stages
from tests.gui.helpers import WAIT_MS, open_and_wait
from tests.npu_artifacts import FINAL_STAGE, ge_ops, toolchain_fusions, write_dump_folder

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


def dump_folder(tmp_path):
    pipeline = run_pipeline(load_model("abs_relu_exp").graph)
    write_dump_folder(tmp_path, [("PreRunBegin", ge_ops(pipeline.original)),
                                 ("PreRunAfterNormalizeGraph", ge_ops(pipeline.original)),
                                 (FINAL_STAGE, ge_ops(pipeline.fused, toolchain_fusions(pipeline)))], pid=7)
    return tmp_path


def shown(qtbot, window, before_title: str, after_title: str) -> None:
    qtbot.waitUntil(lambda: window.session.comparison is not None and window.is_idle()
                    and window.panes["after"].shown is not None and after_title in window.panes["after"].title
                    and before_title in window.panes["before"].title, timeout=WAIT_MS)


def test_scrub_through_the_stages_and_see_what_fused(qtbot, window, tmp_path, dialogs):
    open_and_wait(qtbot, window, "abs_relu_exp")
    panel = window.stages_panel
    dock = panel.parentWidget()
    assert not dock.isVisible()  # no dump folder yet: the run dock alone is its control row
    panel.open_folder(str(dump_folder(tmp_path)))
    qtbot.waitUntil(dock.isVisible, timeout=WAIT_MS)
    shown(qtbot, window, "PreRunAfterNormalizeGraph", FINAL_STAGE)  # the last stage, against the one before
    assert [panel.after.itemText(i).split()[-1] for i in range(panel.after.count())] == [
        "PreRunBegin", "PreRunAfterNormalizeGraph", FINAL_STAGE]
    assert panel.before.itemText(0).startswith("the model's TF graph")
    after = window.panes["after"].view
    assert after.items_by_key[FUSED].status == "new"
    assert window.before.items_by_key["abs_0"].status == "removed"
    groups = [panel.changes.topLevelItem(i).text(0) for i in range(panel.changes.topLevelItemCount())]
    assert any(g.startswith("AutoFusePass") for g in groups)
    window.selection.select_fused([FUSED])  # selecting the fused op lights its three originals
    assert window.selection.current.before == {"abs_0", "relu_0", "exp_0"}
    panel.scrubber.setValue(1)  # two stages with no fusion between them: nothing changed
    shown(qtbot, window, "PreRunBegin", "PreRunAfterNormalizeGraph")
    assert all(item.status == "unchanged" for item in window.after.items_by_key.values())
    assert window.session.stage is Stage.READY and not dialogs


def test_the_models_own_graph_against_the_toolchains_result(qtbot, window, tmp_path):
    open_and_wait(qtbot, window, "abs_relu_exp")
    panel = window.stages_panel
    panel.open_folder(str(dump_folder(tmp_path)))
    shown(qtbot, window, "PreRunAfterNormalizeGraph", FINAL_STAGE)
    panel.before.setCurrentIndex(0)
    panel.before.activated.emit(0)  # the model's TF graph, pinned
    shown(qtbot, window, "abs_relu_exp", FINAL_STAGE)
    assert window.after.items_by_key[FUSED].status == "new"
    panel.scrubber.setValue(0)
    shown(qtbot, window, "abs_relu_exp", "PreRunBegin")  # pinned: the before pane stays the model


def test_a_folder_without_dumps_and_a_broken_stage_are_one_line_each(qtbot, window, tmp_path, dialogs):
    panel = window.stages_panel
    empty = tmp_path / "empty"
    empty.mkdir()
    panel.open_folder(str(empty))
    qtbot.waitUntil(lambda: bool(dialogs), timeout=WAIT_MS)
    assert dialogs[0][1] == "Cannot open the dump folder" and "no GE graph dumps" in dialogs[0][2]
    folder = dump_folder(tmp_path / "dumps")
    final = next((folder / "pid_7_deviceid_0").glob(f"ge_proto_*{FINAL_STAGE}.txt"))
    final.write_text(final.read_text()[:300])
    panel.open_folder(str(folder))
    qtbot.waitUntil(lambda: len(dialogs) == 2, timeout=WAIT_MS)
    assert dialogs[1][1] == "Cannot load the stage" and final.name in dialogs[1][2] and "\n" not in dialogs[1][2]
    panel.scrubber.setValue(1)  # the other stages still load
    shown(qtbot, window, "PreRunBegin", "PreRunAfterNormalizeGraph")


def test_58_stages_of_one_graph_scrub_step_by_step(qtbot, window, tmp_path, dialogs):
    """Every one of the 58 stages a 2020 GE dumped for one graph (5-digit names, no graph part), stepped through
    with the slider from the first to the last; each step shows that stage against the one before. The time
    per step is printed (a loaded machine's figure, not a limit)."""
    labels = write_58_stages(tmp_path / "dumps")
    panel = window.stages_panel
    panel.open_folder(str(tmp_path / "dumps"))
    shown(qtbot, window, labels[-2], labels[-1])
    assert panel.after.count() == 58 and panel.timeline.itemText(0) == "graph (no id: old GE)"
    steps = []
    for i, label in enumerate(labels):
        start = time.perf_counter()
        panel.scrubber.setValue(i)
        shown(qtbot, window, labels[max(0, i - 1)] + " (GE)", label + " (GE)")
        steps.append(time.perf_counter() - start)
        assert panel.after.currentIndex() == i
        if label == FE_FUSION:  # FE's graph fusion: its rewrites show against the stage before
            assert any(item.status == "new" for item in window.after.items_by_key.values())
    assert not dialogs and window.session.stage is Stage.READY
    print(f"\n58 stages stepped: {statistics.median(steps) * 1000:.0f} ms a step (median), "
          f"{max(steps) * 1000:.0f} ms the slowest, {sum(steps):.1f} s in all")
