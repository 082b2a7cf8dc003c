"""GUI test helpers: a toy pass, window set-up and waits for worker results."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from fuselens.core.graph import TensorRef
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import FusionPass, Match, NearMiss

WAIT_MS = 60000


class ToyDropActivation(FusionPass):
    """GUI-test pass: drops every Relu/Relu6 (its producer counts as modified); Sigmoid/Tanh are near misses.

    Not a numerically valid fusion: it only gives the views matches, near misses and a diff they do
    not know in advance, which is the point (the views must not care which pass made a match).
    """

    id = "ToyDropActivation"
    family = "amct"
    title = "toy: drop activations"
    description = "GUI test pass: removes Relu/Relu6 nodes."
    order = 999

    def candidates(self, graph):
        for node in graph:
            if node.op in ("Relu", "Relu6"):
                producer = graph.inputs(node.name)[0].node
                yield Match(self.id, node.name, (node.name, producer), (node.name,), f"drop {node.name}")
            elif node.op in ("Sigmoid", "Tanh"):
                yield NearMiss(self.id, node.name, (node.name,), f"{node.op} is not an activation this toy drops")

    def rewrite(self, graph, editor, match):
        relu, producer = match.nodes
        editor.remove(relu)
        editor.redirect(TensorRef(relu), TensorRef(producer))
        return Rewrite(self.id, match.index, removed=(relu,), modified=(producer,))


def make_window(qtbot, tmp_path, layout_cache, config=None, tensorflow=None):
    from fuselens.gui.main_window import MainWindow  # after the QApplication exists

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings, layout_cache=layout_cache, config=config, tensorflow=tensorflow)
    qtbot.addWidget(window)
    window.resize(1400, 860)
    window.show()
    return window


def shown_view(qtbot, width: int = 600, height: int = 500):
    """A GraphView of its own, shown and exposed, with nothing drawn yet."""
    from fuselens.gui.graph_view import GraphView  # after the QApplication exists

    view = GraphView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


def close_window(window) -> None:
    window.close()
    assert window.workers.pool.activeThreadCount() == 0, "a worker thread is still running"


def open_and_wait(qtbot, window, spec: str, timeout: int = WAIT_MS) -> None:
    """Open a model and wait until it is loaded, fused and drawn in both panes."""
    window.open_model(spec)
    wait_idle(qtbot, window, timeout)


def wait_idle(qtbot, window, timeout: int = WAIT_MS) -> None:
    def ready() -> bool:
        return (window.is_idle() and window.session.pipeline is not None and window.session.model is not None
                and window.panes["before"].shown is not None and window.panes["after"].shown is not None
                and window.before.layout_ is window.panes["before"].shown
                and window.after.layout_ is window.panes["after"].shown)

    qtbot.waitUntil(ready, timeout=timeout)


def save_default_run(sample: str, folder: Path, steps: int) -> str:
    """One real run of `sample` (child process, TensorFlow on CPU) with the window's default passes, saved as a
    run file in `folder`; its path."""
    from fuselens.core.formats.loaders import load_model
    from fuselens.core.runtime import RunRequest, run
    from fuselens.passes.pipeline import run_pipeline

    graph = load_model(sample).graph
    pipeline = run_pipeline(graph)
    result = run(RunRequest(original=graph, fused=pipeline.fused, model=sample, steps=steps, warmup=1,
                            original_to_final=pipeline.provenance.original_to_final()))
    path = folder / f"{sample}_run.json"
    result.save(path)
    return str(path)
