"""Your own pass, live in the window: a ge.passes file opened, edited on disk and saved again (a pattern broken,
fixed, a meet_requirements that raises), the match list, the pass panel and the after pane following each save,
the user's own line in the error panel, an endless loop cancelled by the timeout, and a new pass made from the
nodes selected in the before pane that matches them. The window stays up throughout."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from fuselens.core.package_data import resource
from fuselens.gui.pass_panel import USER_PASSES_TITLE
from fuselens.passes.ge_python import load_pass_files
from fuselens.session.pass_files import PassFiles
from fuselens.session.pass_skeleton import pattern_skeleton
from fuselens.session.tensorflow_helper import TensorFlowHelper
from tests.gui.helpers import WAIT_MS, close_window, make_window, open_and_wait

SAMPLE = "matmul_add_chain"
PASS_NAME = "MyMatMulAddPass"
PASS = '''"""A user's pass, as they would deploy it."""

from ge.es.all import GEMM, MatMulV2
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="MyMatMulAddPass", stage=PassStage.BEFORE_INFER_SHAPE)
class MyMatMulAddPass(PatternFusionPass):
    @pattern
    def matmul_add(self, inputs):
        a, b, c = inputs[:3]
        return MatMulV2(a, b) + c

    def meet_requirements(self, match_result):
        return True

    def replacement(self, inputs):
        a, b, c = inputs[:3]
        return GEMM(a, b, c, 1.0, 1.0)
'''
BROKEN = PASS.replace("return MatMulV2(a, b) + c", "return MatMulV2(a, b) * c")  # no MatMul + Mul in the sample
RAISING = PASS.replace("        return True\n", "        raise ValueError('my check broke')\n")
RAISE_LINE = RAISING.splitlines().index("        raise ValueError('my check broke')") + 1
ENDLESS = PASS.replace("        return True\n", "        while True:\n            pass\n")


def _save(path, text: str) -> None:
    """As an editor that saves by rename does (a new file, moved over the old one)."""
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_text(text)
    os.replace(temporary, path)


def _save_and_wait(qtbot, window, path, text: str) -> float:
    """Save `text` and wait until the window shows the run it started; the seconds from the save, printed."""
    before = window.session.pass_run
    saved = time.perf_counter()
    _save(path, text)
    qtbot.waitUntil(lambda: window.session.pass_run is not before and window.is_idle(), timeout=WAIT_MS)
    seconds = time.perf_counter() - saved
    print(f"{path.name}: the window showed the new run {seconds:.2f} s after the save")
    return seconds


def _matches(window) -> int:
    result = window.session.pipeline.result(PASS_NAME)
    return len(result.matches) if result is not None else 0


def _rows(window) -> list[str]:
    return [window.match_list.topLevelItem(i).text(0) for i in range(window.match_list.topLevelItemCount())]


def test_the_match_list_follows_each_save_of_the_pass_file(qtbot, window, tmp_path):
    path = tmp_path / "my_pass.py"
    path.write_text(PASS)
    open_and_wait(qtbot, window, SAMPLE)
    window.py_passes.open_file(str(path))
    qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)
    assert window.py_passes.dock.isVisible()
    assert _matches(window) == 1 and any(row.startswith(f"{PASS_NAME}  (1 ✔") for row in _rows(window))
    assert window.pass_panel.user_group.text(0) == USER_PASSES_TITLE
    assert window.pass_panel.user_items[PASS_NAME].text(1).startswith("1 ✔")
    assert "GEMM" in window.session.pipeline.fused.op_histogram()  # the after pane's graph

    _save_and_wait(qtbot, window, path, BROKEN)
    assert _matches(window) == 0 and window.session.pass_run.errors == []
    assert "GEMM" not in window.session.pipeline.fused.op_histogram()

    _save_and_wait(qtbot, window, path, PASS)
    assert _matches(window) == 1 and "GEMM" in window.session.pipeline.fused.op_histogram()

    _save_and_wait(qtbot, window, path, RAISING)
    (error,) = window.session.pass_run.errors
    assert "ValueError: my check broke" in error.message
    rows = window.py_passes.panel.frame_rows()
    assert (str(path), RAISE_LINE) in [where for _text, where in rows]  # the user's own file and line
    assert all(where is None or where[0] == str(path) for _text, where in rows)  # none of FuseLens's frames
    assert window.isVisible()

    _save_and_wait(qtbot, window, path, PASS)  # fixed again: the error goes, the match is back
    assert window.session.pass_run.errors == [] and _matches(window) == 1


@pytest.fixture
def own_helper():
    helper = TensorFlowHelper()
    helper.start()
    yield helper
    helper.stop()


def test_an_endless_loop_in_a_pass_is_cancelled_and_the_last_result_stays(qtbot, tmp_path, dialogs, layout_cache,
                                                                         own_helper):
    window = make_window(qtbot, tmp_path, layout_cache, tensorflow=own_helper)
    try:
        path = tmp_path / "my_pass.py"
        path.write_text(PASS)
        window.session.pass_files = replace(PassFiles(), timeout_s=3.0)
        open_and_wait(qtbot, window, SAMPLE)
        window.py_passes.open_file(str(path))
        qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)
        good, first_helper = window.session.pipeline, own_helper.pid
        assert _matches(window) == 1

        _save_and_wait(qtbot, window, path, ENDLESS)
        (error,) = window.session.pass_run.errors
        assert error.message == "the pass ran longer than 3 s: cancelled"
        assert window.py_passes.panel.frame_rows()[0][0] == "✘ the pass ran longer than 3 s: cancelled"
        assert window.session.pipeline is good  # the last good result stays on screen
        assert own_helper.pid is not None and own_helper.pid != first_helper  # killed and started again
        assert not dialogs and window.isVisible()

        _save_and_wait(qtbot, window, path, PASS)  # the new helper runs the fixed pass
        assert _matches(window) == 1 and window.session.pipeline is not good
    finally:
        close_window(window)


def test_a_pattern_skeleton_from_selected_nodes_matches_them(qtbot, window, tmp_path, monkeypatch):
    """Click MatMul and Ctrl+click BiasAdd in the before pane, New pass from selection: the file written loads,
    registers its pass and matches exactly the selected nodes when the window runs it."""
    open_and_wait(qtbot, window, SAMPLE)
    selected = ["dense1/MatMul", "dense1/BiasAdd"]
    view, ctrl = window.before, Qt.KeyboardModifier.ControlModifier

    def click(name: str, modifier: Qt.KeyboardModifier, then: set[str]) -> None:
        node = view.items_by_key[name].node
        view.centerOn(node.x, node.y)
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, view.mapFromScene(node.x, node.y))
        qtbot.waitUntil(lambda: window.selection.current.before == frozenset(then))

    click("dense1/MatMul", Qt.KeyboardModifier.NoModifier, {"dense1/MatMul"})
    click("dense1/BiasAdd", ctrl, set(selected))  # Ctrl+click adds a node
    click("dense1/BiasAdd", ctrl, {"dense1/MatMul"})  # and takes it out again
    click("dense1/BiasAdd", ctrl, set(selected))
    target = tmp_path / "from_selection.py"
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *_a, **_k: ("MyDenseBiasPass", True)))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *_a, **_k: (str(target), "")))
    monkeypatch.setenv("EDITOR", "true")  # an editor that opens and closes at once
    window.py_passes.new_from_selection()
    qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)

    text = target.read_text()
    assert "from ge.passes import" in text and "MatMulV2(inputs[0], inputs[1])  # dense1/MatMul" in text
    loaded = load_pass_files([target])
    assert [p.name for p in loaded.passes] == ["MyDenseBiasPass"] and not loaded.errors
    result = window.session.pipeline.result("MyDenseBiasPass")
    assert window.session.pass_run.errors == []
    (match,) = result.matches
    assert set(selected) <= set(match.nodes)
    skeleton = pattern_skeleton(window.session.graph("before"), selected, pass_name="MyDenseBiasPass")
    assert skeleton.inputs == ("input", "dense1/kernel/ReadVariableOp", "dense1/bias/ReadVariableOp")
    assert skeleton.outputs == ("dense1/BiasAdd",)


def test_new_pass_from_template_writes_a_copy_opens_and_runs_it(qtbot, window, tmp_path, monkeypatch, dialogs):
    """File > New pass from template > matmul_add_gemm: a copy where the user says (an existing file is not
    replaced unless they say yes), watched and run: the template's pass matches on the sample."""
    open_and_wait(qtbot, window, SAMPLE)
    target = tmp_path / "mine.py"
    target.write_text("# the user's own file\n")
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *_a, **_k: (str(target), "")))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *_a, **_k: QMessageBox.StandardButton.No))
    (action,) = [a for a in window.py_passes.template_menu.actions() if a.text() == "matmul_add_gemm…"]
    action.trigger()  # as the menu does (with its `checked` argument)
    assert target.read_text() == "# the user's own file\n" and window.session.pass_files.paths == ()
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *_a, **_k: QMessageBox.StandardButton.Yes))
    action.trigger()
    qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)
    assert target.read_text() == resource("ge_passes", "matmul_add_gemm.py").read_text()
    assert window.session.pass_files.paths == (str(target),) and str(target) in window.py_passes.watch.paths
    assert [p.name for p in window.session.pass_run.passes] == ["MatMulAddToGemmPass"]
    assert window.session.pipeline.result("MatMulAddToGemmPass").matches

    window.py_passes.close_files()  # File > Close pass files: fused without them again
    qtbot.waitUntil(lambda: window.is_idle() and window.session.pipeline.result("MatMulAddToGemmPass") is None,
                    timeout=WAIT_MS)
    assert window.pass_panel.user_group is None and window.py_passes.watch.paths == []


def test_user_code_never_runs_in_the_window_process_and_a_saved_configuration_keeps_the_files(
        qtbot, window, tmp_path):
    """The pass records the process it runs in, at import and in meet_requirements: never the window's. Save
    pass configuration keeps the pass files; Open pass configuration opens them again as watched pass files
    (the JSON is read here, the files are loaded in the helper)."""
    pids = tmp_path / "pids.txt"
    path = tmp_path / "my_pass.py"
    record = f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')"
    path.write_text(f"import os\n{record}\n" + PASS.replace("        return True\n",
                                                          f"        {record}\n        return True\n"))
    open_and_wait(qtbot, window, SAMPLE)
    window.py_passes.open_file(str(path))
    qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)
    assert _matches(window) == 1
    saved = tmp_path / "passes.json"
    window.debug_tools.save_config(str(saved))
    window.py_passes.close_files()
    qtbot.waitUntil(lambda: window.is_idle() and window.session.pipeline.result(PASS_NAME) is None, timeout=WAIT_MS)

    window.debug_tools.open_config(str(saved))
    qtbot.waitUntil(lambda: window.is_idle() and window.session.pipeline.result(PASS_NAME) is not None,
                    timeout=WAIT_MS)
    assert window.session.pass_files.paths == (str(path),) and str(path) in window.py_passes.watch.paths
    assert _matches(window) == 1 and window.py_passes.dock.isVisible()
    report = json.loads(window.session.export_report(tmp_path / "report.json").read_text())  # knows the pass
    assert {"pass": PASS_NAME, "family": "ge_python"}.items() <= next(
        p for p in report["passes"] if p["pass"] == PASS_NAME).items()
    ran_in = {int(line) for line in pids.read_text().split()}
    assert ran_in and os.getpid() not in ran_in, ran_in


def test_a_pass_tried_on_a_ge_dump_opened_in_the_window(qtbot, window, tmp_path, dialogs, load_sample):
    """The graph the host's GE had at a stage, opened as the model: the pass binds GE's MatMulV2 (the TF
    parser's name for tf.matmul) and rewrites it; compile and run is refused in one line (it runs on the host)."""
    from tests.npu_artifacts import ge_ops, ge_proto_text

    ops = ge_ops(load_sample(SAMPLE))
    for op in ops:
        if op.type == "MatMul":
            op.type = "MatMulV2"
    dump = tmp_path / "ge_proto_00000001_graph_0_RunCustomPassBeforeInfershape.txt"
    dump.write_text(ge_proto_text(ops), encoding="utf-8")
    path = tmp_path / "my_pass.py"
    path.write_text(PASS)
    open_and_wait(qtbot, window, str(dump))
    assert window.session.model.format == "ge_dump"
    window.py_passes.open_file(str(path))
    qtbot.waitUntil(lambda: window.session.pass_run is not None and window.is_idle(), timeout=WAIT_MS)
    assert _matches(window) >= 1 and "GEMM" in window.session.pipeline.fused.op_histogram()
    window.run_panel.start_run()
    (kind, _title, text), *_ = dialogs
    assert kind == "critical"
    assert "is a GE graph dump: it runs on the Ascend host, not in TensorFlow" in text and "\n" not in text
    assert window.isVisible()
