"""TensorFlow stays out of the window's process: the helper does shapes, Keras loading and the fusions
that may need TensorFlow (the others run in the window's worker), and when it dies the window says so,
keeps its graphs, and the next fusion starts a new helper."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import Graph, proto
from fuselens.passes.config import PassConfig
from fuselens.session import FusionJob, Stage, tensorflow_helper
from fuselens.session.pass_files import PassFiles
from fuselens.session.tensorflow_helper import (
    FAULT_ENV,
    TensorFlowHelper,
    TimedOut,
    fusion_needs_tensorflow,
    needs_tensorflow,
)
from tests.gui.helpers import WAIT_MS, close_window, make_window, open_and_wait, wait_idle


@pytest.fixture
def crashing_helper(monkeypatch):
    """A helper of its own that kills itself (SIGKILL) on its first fusion request; every fusion is sent to it,
    as one that may need TensorFlow is."""
    monkeypatch.setattr(tensorflow_helper, "fusion_needs_tensorflow", lambda graph: True)
    monkeypatch.setenv(FAULT_ENV, "SIGKILL@fuse")
    helper = TensorFlowHelper()
    helper.start()
    monkeypatch.delenv(FAULT_ENV)  # the helper started next, after the crash, is a healthy one
    yield helper
    helper.stop()


def test_a_helper_killed_mid_fusion_leaves_the_window_standing(qtbot, tmp_path, dialogs, layout_cache,
                                                               crashing_helper):
    window = make_window(qtbot, tmp_path, layout_cache, tensorflow=crashing_helper)
    try:
        window.open_model("abs_relu_exp")
        qtbot.waitUntil(lambda: bool(dialogs), timeout=WAIT_MS)
        kind, title, text = dialogs[0]
        assert kind == "critical" and title == "Fusion failed"
        assert text.startswith("the TensorFlow helper process died from signal SIGKILL") and "while fusing" in text
        assert "next action starts a new helper" in text
        qtbot.waitUntil(lambda: window.session.stage is Stage.READY, timeout=WAIT_MS)
        assert window.isVisible() and window.session.model.name == "abs_relu_exp"
        assert window.panes["before"].shown is not None  # the original graph stays on screen
        window.pass_panel.set_enabled("ConvBatchnormFusionPass", False)  # the next action fuses again
        wait_idle(qtbot, window)
        assert window.session.pipeline is not None and crashing_helper.pid is not None
        assert "AscBackend" in window.session.pipeline.fused.op_histogram()
    finally:
        close_window(window)


def test_tensorflow_errors_in_the_helper_are_one_line(tmp_path):
    helper = TensorFlowHelper()
    try:
        with pytest.raises(FuseLensError, match="no task 'nothing'"):
            helper.call("nothing", None, "testing")
        assert helper.pid is not None  # an error is not a death
    finally:
        helper.stop()


ENDLESS_PASS = """
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="EndlessPass", stage=PassStage.BEFORE_INFER_SHAPE)
class EndlessPass(PatternFusionPass):
    @pattern
    def add(self, inputs):
        return inputs[0] + inputs[1]

    def meet_requirements(self, match_result):
        while True:
            pass

    def replacement(self, inputs):
        return inputs[0]
"""


def test_a_pass_that_never_ends_is_cancelled_at_its_timeout_and_a_new_helper_started(tmp_path):
    """An endless loop in a user's pass: the request is cancelled at its timeout (counted from when the helper
    started it), the helper killed, and a fresh one answers the next request."""
    path = tmp_path / "endless.py"
    path.write_text(ENDLESS_PASS)
    job = FusionJob(1, load_model("matmul_add_chain").graph, PassConfig.default(),
                    PassFiles((str(path),), timeout_s=1.0))
    helper = TensorFlowHelper()
    try:
        helper.start()
        first = helper.pid
        with pytest.raises(TimedOut, match=r"^the pass ran longer than 1 s: cancelled$"):
            helper.run_pass_files(job, lambda _text: None, lambda: False)
        assert helper.pid is not None and helper.pid != first
        with pytest.raises(FuseLensError, match="no task 'nothing'"):  # the new helper answers
            helper.call("nothing", None, "testing")
    finally:
        helper.stop()


def test_a_fusion_with_the_users_pass_files_runs_their_passes_as_the_window_does(tmp_path):
    """`fuse` of a job with pass files (a bisect's or a layerwise compare's re-fusion) runs the user's passes in the
    helper, as the window's own fusion does; a file that does not load is one line, not the built-in passes alone."""
    path = tmp_path / "drop_add.py"
    path.write_text(ENDLESS_PASS.replace("EndlessPass", "DropAddPass")
                    .replace("        while True:\n            pass\n", "        return True\n"))
    graph = load_model("matmul_add_chain").graph
    helper = TensorFlowHelper()
    try:
        plain = helper.fuse(FusionJob(1, graph, PassConfig.default()), lambda _text: None, lambda: False)
        mine = helper.fuse(FusionJob(2, graph, PassConfig.default(), PassFiles((str(path),))), lambda _text: None,
                           lambda: False)
        assert plain.result("DropAddPass") is None and mine.result("DropAddPass").matches
        assert mine.fused.op_histogram() != plain.fused.op_histogram()
        path.write_text("this is not python(")
        with pytest.raises(FuseLensError, match=r"^your pass files ran nothing: "):
            helper.fuse(FusionJob(3, graph, PassConfig.default(), PassFiles((str(path),))), lambda _text: None,
                        lambda: False)
    finally:
        helper.stop()


def test_a_pass_that_ends_the_helper_is_one_worded_line(tmp_path):
    """os._exit() in a user's pass ends the helper, not the caller: one line says so, the next call starts anew."""
    path = tmp_path / "exits.py"
    exits = "        import os\n        os._exit(3)\n"
    path.write_text(ENDLESS_PASS.replace("        while True:\n            pass\n", exits))
    job = FusionJob(1, load_model("matmul_add_chain").graph, PassConfig.default(), PassFiles((str(path),)))
    helper = TensorFlowHelper()
    try:
        with pytest.raises(FuseLensError, match=r"^the TensorFlow helper process exited with code 3 without a result "
                                                r"while running your passes; the window keeps what it shows"):
            helper.run_pass_files(job, lambda _text: None, lambda: False)
        with pytest.raises(FuseLensError, match="no task 'nothing'"):
            helper.call("nothing", None, "testing")
    finally:
        helper.stop()


def test_which_models_need_tensorflow(tmp_path):
    assert not needs_tensorflow("demo") and not needs_tensorflow(str(tmp_path / "missing.pb"))
    saved = tmp_path / "model"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"")
    assert needs_tensorflow(str(saved))


def test_a_fusion_protobuf_can_answer_is_not_sent_to_the_helper():
    """Every op in the table (or the graph's library): fused here, the helper never started, also for a bare .pb
    (its shapes derived from the protobuf, as `fuselens fuse` does: the same matches). An op only TensorFlow's
    registry might know goes to the helper."""
    graph = load_model("abs_relu_exp").graph
    assert not fusion_needs_tensorflow(graph)
    helper = TensorFlowHelper()
    pipeline = helper.fuse(FusionJob(0, graph, PassConfig.default()), lambda _text: None, lambda: False)
    assert "AscBackend" in pipeline.fused.op_histogram() and helper.pid is None

    bare = proto.GraphDef()
    bare.CopyFrom(graph.graph_def)
    for node in bare.node:
        del node.attr["_output_shapes"]
    bare_graph = Graph(bare)
    assert not fusion_needs_tensorflow(bare_graph) and not bare_graph.shapes_ready
    fused_bare = helper.fuse(FusionJob(1, bare_graph, PassConfig.default()), lambda _text: None, lambda: False)
    assert helper.pid is None and fused_bare.fused.op_histogram() == pipeline.fused.op_histogram()
    assert [len(r.matches) for r in fused_bare.results] == [len(r.matches) for r in pipeline.results]
    unknown = proto.GraphDef()
    unknown.CopyFrom(graph.graph_def)
    unknown.node[-1].op = "MyCustomOp"
    assert fusion_needs_tensorflow(Graph(unknown))


@pytest.mark.slow
def test_the_window_process_never_imports_tensorflow(tmp_path):
    """Open, fuse (AutoFuse builds library functions), infer shapes, run with a layerwise compare and
    bisect a sample, in a fresh process."""
    script = textwrap.dedent("""
        import sys, time
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from fuselens.gui.main_window import MainWindow
        from fuselens.session import Stage
        window = MainWindow(settings=QSettings(sys.argv[1], QSettings.Format.IniFormat))
        window.show()
        window.open_model("abs_relu_exp")
        deadline = time.time() + 120
        def wait(ready):
            while not ready() and time.time() < deadline:
                app.processEvents()
                time.sleep(0.01)
            assert ready(), "timed out"
        wait(lambda: window.session.stage is Stage.READY and window.is_idle() and window.session.pipeline)
        assert "AscBackend" in window.session.pipeline.fused.op_histogram()
        assert all(window.session.graph(side).shapes_ready for side in ("before", "after"))
        window.run_panel.steps.setValue(2)
        window.run_panel.warmup.setValue(1)
        window.run_panel.layerwise_box.setChecked(True)  # re-fuses up to each pass (here: no TensorFlow needed)
        window.run_panel.start_run()
        wait(lambda: window.run_panel.result is not None or not window.run_panel.running())
        assert window.run_panel.result is not None, "the run failed"
        assert window.session.layerwise is not None, "no layerwise compare"
        window.debug_tools.bisect.start()  # fuses every trial, runs in a child
        wait(lambda: not window.debug_tools.bisect.running())
        assert window.session.bisect is not None, "the bisect failed"
        print("TENSORFLOW-IMPORTED" if "tensorflow" in sys.modules else "NO-TENSORFLOW")
        window.close()
    """)
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "settings.ini")], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert "NO-TENSORFLOW" in out.stdout, out.stdout + out.stderr[-2000:]


def test_open_a_keras_file_through_the_helper(qtbot, window, tmp_path):
    """A .keras file needs TensorFlow to read: the helper reads it and the window shows it."""
    import keras

    inputs = keras.Input((8,))
    model = keras.Model(inputs, keras.layers.Dense(4, activation="relu")(inputs))
    path = tmp_path / "tiny.keras"
    model.save(path)
    assert needs_tensorflow(str(path))
    open_and_wait(qtbot, window, str(path))
    assert window.session.model.format == "keras" and "MatMul" in window.session.model.graph.op_histogram()
