"""The FuseLens main window: chrome and wiring around one Session.

Passes and matches | before and after panes | properties, plus a bottom dock area. The state
that matters (model, PassConfig, pipeline, collapsed scopes, last run, stage) lives in the
Qt-free `Session`; the window turns its jobs into workers and its changes into views. It holds
no fusion logic. Work that uses TensorFlow (fusion, shape inference, SavedModel and Keras
loading) goes to the TensorFlow helper process, fusion and shapes through ONE worker slot so
they never overlap; TensorFlow itself is never imported here.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtWidgets import QMainWindow

from fuselens.core.formats.loaders import LoadedModel
from fuselens.core.layout import SCOPE_PREFIX, Layout, LayoutCache, default_cache
from fuselens.core.layout.overview import drawn_name, expand_scope, hidden_in
from fuselens.gui.audit_panel import install_audit_panel
from fuselens.gui.chrome import build_chrome
from fuselens.gui.debug_tools import install_debug_tools
from fuselens.gui.dialogs import RecentFiles, show_error
from fuselens.gui.guard import add_reporter, safe_override
from fuselens.gui.host import PanelHost
from fuselens.gui.match_list import MatchList
from fuselens.gui.memory import give_back_freed_memory
from fuselens.gui.model_jobs import ModelJobs
from fuselens.gui.overlay import WhyNotOverlay
from fuselens.gui.pane import Pane, diff_status
from fuselens.gui.pass_panel import PassPanel
from fuselens.gui.presentation import PresentationParts, install_presentation
from fuselens.gui.properties import PropertiesPanel, show_body_table
from fuselens.gui.py_passes import install_py_passes
from fuselens.gui.run_panel import BACKEND_PROBE, install_run_panel
from fuselens.gui.search import SearchHits
from fuselens.gui.selection import Selection, SelectionModel
from fuselens.gui.stages_panel import install_stages_panel
from fuselens.gui.workers import WorkerPool, frozen_as_made, run_in_slices
from fuselens.passes.base import Match, NearMiss
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.session import SIDES, Session, Stage
from fuselens.session.tensorflow_helper import TensorFlowHelper, fusion_needs_tensorflow, shared_helper

FILL_UNPAINTED_MS = 300  # the match list fills this long after the after pane's scene is built, if never painted
EXPLAIN_SLICE_S = 0.015  # the matches' explanations (MainWindow._explain), this long a slice
EXPLAINED_FROZEN_EVERY = 500  # explanations made between two gc.freeze() calls (workers.frozen_as_made)
# A graph of at most this many nodes that fuses without TensorFlow is fused as soon as it is loaded, beside its
# first layout: that is dot, a child process, and its scene is small (MobileNetV2's after pane 1.39 -> 0.99 s,
# DenseNet121's 1.99 -> 1.55 s). A bigger one is fused once drawn: its layout and scene are this process's
# Python work, which a fusion beside it slowed (the 20k-node graph's first view 2.1 -> 4.0 s).
EARLY_FUSION_NODES = 10_000

# The TensorFlow helper and the backend probe (each a child that imports TensorFlow: ~3 s of a core) start
# once the first model's after pane is painted, so they do not share the 2 cores with its load, fusion and
# layout; else once the window has been idle this long (no model opening, or one that failed) ...
BACKGROUND_IDLE_S = 1.0
BACKGROUND_LATEST_S = 30.0  # ... and at the latest this long after the first paint (a 20k-node graph's fusion
# takes 5-10 s, and two TensorFlow imports beside it share its 2 cores)
MEMORY_POLL_MS = 100  # after a model opened, how often the window looks whether it is idle (_give_back_memory)


class MainWindow(QMainWindow):
    layout_done = Signal(str)  # side: a pane shows a new layout

    def __init__(self, *, settings: QSettings | None = None, layout_cache: LayoutCache | None = None,
                 config: PassConfig | None = None, tensorflow: TensorFlowHelper | None = None):
        super().__init__()
        self.setWindowTitle("FuseLens")
        self.resize(1500, 900)
        self.setAcceptDrops(True)
        self.recent = RecentFiles(settings if settings is not None else QSettings("FuseLens", "FuseLens"))
        self.layout_cache = layout_cache if layout_cache is not None else default_cache()
        self.session = Session(config)
        self.tensorflow = tensorflow or shared_helper()  # TensorFlow never runs in the window's own process
        self._background_timer: QTimer | None = None  # started at the first paint (_start_background_soon)
        self._memory_timer = QTimer(self, interval=MEMORY_POLL_MS)  # a model opened: _give_back_memory
        self._memory_timer.timeout.connect(self._give_back_memory)
        self._background_started = False
        self._shown_at = self._idle_since = 0.0
        self.workers = WorkerPool(self)
        self.selection = SelectionModel(self)
        self._centre_when_built: set[str] = set()  # sides opening scopes for the selection, to centre once drawn
        # Collapse state each pane is being laid out for (boxes opened or closed): asked again for the same
        # state, a pane is not laid out twice; and the after pane follows the before pane's change only once
        # the before pane has drawn it (see _follow_collapsed).
        self._following: dict[str, frozenset[str]] = {}
        self._after_pending = False  # the fused graph's layout is about to start (_show_pipeline)
        self._results_pending: list | None = None  # the match list's, once the after pane is drawn
        self._explaining: PipelineResult | None = None  # whose matches are being explained (_explain)
        self._after_waits_for_paint = False  # the after pane follows new scopes after the before pane's paint
        self._before_waits_for_explanations = False  # its layout with shapes, once the after pane is drawn (_on_shapes)
        self._open_after_paint: str | None = None  # a model to open once the window is painted

        self.pass_panel = PassPanel(self.session.config, self)
        self.match_list = MatchList(self)
        self.properties = PropertiesPanel(self)
        self.panes = {side: Pane(side, title, self.workers, self.layout_cache, self)
                      for side, title in (("before", "Before (original)"), ("after", "After (fused)"))}
        self.before, self.after = self.panes["before"].view, self.panes["after"].view
        self.why_not = WhyNotOverlay(self.before)  # a selected near miss drawn over the original graph
        self.chrome = build_chrome(self)
        self.search = self.chrome.search
        views = {side: pane.view for side, pane in self.panes.items()}
        self.search_hits = SearchHits(self.search, self.chrome.search_status, views, self.select_key)
        self._stop_reporting = add_reporter(lambda text: self.statusBar().showMessage(text, 10000))  # gui.guard
        self.jobs = ModelJobs(self.session, self.workers, self.tensorflow, self.statusBar(), self._on_shapes,
                              lambda title, text: show_error(self, title, text, self.statusBar()))
        self._connect()
        self.host = PanelHost(self, self.session, self.selection, self.workers, self.tensorflow, views,
                              self.layout_done, self.set_config, self.jobs.fuse, self.chrome.toolbar)
        self.run_panel = install_run_panel(self.host)  # the Run & profile dock, Run menu and toolbar action
        self.debug_tools = install_debug_tools(self.host, self.match_list, self.run_panel)  # skips, bisect, compare
        self.stages_panel = install_stages_panel(self.host, self.chrome.open_dumps_action)  # the toolchain's dumps
        self.py_passes = install_py_passes(self.host, self.pass_panel, self.chrome.file_menu,
                                           self.chrome.recent_menu.menuAction())  # your ge.passes files, live
        self.audit = install_audit_panel(self.host, self.open_model)  # File > Audit folder…: a zoo in the background
        parts = PresentationParts(self.panes, self.match_list, self.why_not)
        self.presentation = install_presentation(self.host, parts)  # View > Presentation (F11): full screen, keys

    # ---- construction ---------------------------------------------------------------------------
    def _connect(self) -> None:
        self.session.subscribe(self._on_session)
        self.before.painted.connect(self._on_before_painted)
        self.after.painted.connect(self._start_background)
        self.selection.changed.connect(self._on_selection)
        self.pass_panel.config_edited.connect(self.set_config)
        self.match_list.item_chosen.connect(lambda item: self.selection.select_item(item))
        for side, view in (("before", self.before), ("after", self.after)):
            view.node_clicked.connect(lambda key, s=side: self.select_key(s, key))
            view.node_toggled.connect(lambda key, s=side: self.select_key(s, key, toggle=True))
            view.background_clicked.connect(self.selection.clear)
            view.node_activated.connect(lambda key, s=side: self._on_activated(s, key))
            view.body_table_requested.connect(lambda key, s=side: show_body_table(self.panes[s].shown_graph, key, self))
            view.collapse_requested.connect(lambda scopes, s=side: self.session.set_collapsed(s, scopes))
            view.built.connect(lambda s=side: self._on_built(s))
        after = self.panes["after"]
        for ended in (after.view.painted, after.failed, after.dropped):  # in a turn of its own (see _fill_match_list)
            ended.connect(lambda *_: QTimer.singleShot(1, self, self._fill_match_list))
        # in case the after pane is not painted (hidden, minimised)
        after.view.built.connect(lambda: QTimer.singleShot(FILL_UNPAINTED_MS, self, self._fill_match_list))
        for pane in self.panes.values():
            pane.laid_out.connect(lambda layout, s=pane.side: self._on_laid_out(s, layout))
            pane.failed.connect(lambda _text, s=pane.side: self._on_layout_dropped(s, self._following.get(s)))
            pane.failed.connect(self._on_layout_error)
            pane.dropped.connect(lambda collapsed, s=pane.side: self._on_layout_dropped(s, collapsed))
            pane.message.connect(lambda text: self.statusBar().showMessage(text, 10000))

    def is_idle(self) -> bool:
        """No work running or about to start (tests and benchmarks wait for this), the last model's memory given
        back too."""
        return self._work_done() and not self._memory_timer.isActive()

    def _work_done(self) -> bool:
        return not self.work_under_way()

    def work_under_way(self) -> list[str]:
        """What the window is still doing or about to do, named (empty once the work is done): a test that waited
        in vain for an idle window says what it waited on."""
        pending = {"a worker": self.workers.busy(), f"the session ({self.session.stage.name})": self.session.busy,
                   "the match list": self.match_list.filling, "the before pane's scene": self.before.building,
                   "the after pane's scene": self.after.building, "the after pane's layout": self._after_pending,
                   "the after pane, for the before pane's paint": self._after_waits_for_paint,
                   "the before pane's shapes, for the explanations": self._before_waits_for_explanations,
                   "the match list's results": self._results_pending is not None,
                   "the explanations": self._explaining is not None}
        return [name for name, under_way in pending.items() if under_way]

    # ---- the session's changes become views -----------------------------------------------------
    def _on_session(self, what: str) -> None:
        if what == "model":
            self._show_model()
        elif what == "pipeline":
            self._show_pipeline()
        elif what == "config":
            self.pass_panel.show_config(self.session.config)
        elif what == "collapsed":
            self._follow_collapsed()

    def _on_layout_dropped(self, side: str, collapsed: frozenset[str] | None) -> None:
        """A pane's layout for these scopes failed, was cancelled or is not shown: nothing will be built for
        it, so the after pane does not wait for it (a failed before pane is not laid out again here)."""
        if collapsed is not None and self._following.get(side) == collapsed:
            del self._following[side]
            self._follow_collapsed(("after",))
        if side == "before":
            self._lay_out_after()

    def _follow_collapsed(self, sides: tuple[str, ...] = SIDES) -> None:
        """Lay out again the panes whose collapsed scopes changed, the before pane first: both layout workers and
        the scene updates at once shared the interpreter lock and the window stalled for their sum, so the
        after pane's worker starts once the before pane's scene is built and painted (_follow_when_painted)."""
        for side in sides:
            pane, wanted = self.panes[side], self.session.collapsed[side]
            if pane.shown is None or wanted is None or pane.shown.collapsed == wanted \
                    or self._following.get(side) == wanted:
                continue
            if side == "after" and "before" in self._following:
                continue  # once the before pane is built and painted (_on_built)
            self._following[side] = wanted
            self.relayout(side)

    def _show_model(self) -> None:
        model, comparison = self.session.model, self.session.comparison
        self._memory_timer.start()  # the last model's memory back to the system once this one is drawn
        self._following.clear()
        self._after_waits_for_paint = self._before_waits_for_explanations = False
        for side, pane in self.panes.items():
            pane.clear(f"{'Before' if side == 'before' else 'After'}: {comparison[side == 'after']}"
                       if comparison else None)
        self.selection.set_provenance(None)
        self.selection.clear()
        self._results_pending = None
        self.match_list.set_results([])
        self.chrome.match_filter.refresh()
        self.pass_panel.set_counts([])
        self.setWindowTitle(f"FuseLens — {model.name}")
        self.statusBar().showMessage(f"{model.name}: {len(model.graph)} nodes")
        self.relayout("before")  # the original graph is drawn first; fusion starts once it is painted

    def _show_pipeline(self) -> None:
        pipeline = self.session.pipeline
        if pipeline is None:
            return
        self.selection.set_provenance(pipeline.provenance)
        self.pass_panel.set_counts(pipeline.results)
        self.panes["before"].apply_diff(pipeline.provenance)
        matches = sum(len(r.matches) for r in pipeline.results)
        misses = sum(len(r.near_misses) for r in pipeline.results)
        self.statusBar().showMessage(f"fused: {len(pipeline.original)} -> {len(pipeline.fused)} nodes, "
                                     f"{matches} matches, {misses} near misses ({pipeline.seconds * 1000:.0f} ms)")
        # The after pane's layout worker starts in the event-loop turn after the repaint of the new diff colours
        # and counts, and the match list fills once the after pane is drawn (or its layout ended otherwise):
        # the list's slices beside the layout worker shared the interpreter lock, and every one of them waited
        # for it (a stall); and the picture is what the user waits for (the 20k graph's list: 1.2 s of slices).
        self._after_pending = True
        self._results_pending = pipeline.results
        if self.match_list.filling:
            self.match_list.set_results([])  # an older pipeline's rows are not filled on
        QTimer.singleShot(0, self, self._lay_out_after)

    def _fill_match_list(self) -> None:
        """The pipeline's matches and near misses into the list, once the after pane is painted: filled in the
        event-loop turn its scene was complete, the list's first rows and the first slice of explanations came
        before that paint (the 20k graph's after pane 40-70 ms later, in one stall of 90 ms); filled in the turn
        of that paint, the paint, the first rows and the first explanations were one stall of 90 ms too. So the
        paint, the list's first slice and the explanations' first slice each have a turn of their own."""
        if self._results_pending is None or self._after_pending:  # nothing to fill, or its layout yet to start
            return
        results, self._results_pending = self._results_pending, None
        self.match_list.set_results(results)
        self.chrome.match_filter.refresh()
        self._explain(self.session.pipeline)

    def _explain(self, pipeline: PipelineResult | None) -> None:
        """The matches' explanations, which the fusion left for after the picture (15-20 % of it), in slices here:
        a worker beside the panes made every paint wait for the interpreter lock (the 20k graph's after pane
        painted 0.6 s late). Then the properties and the presentation show the current match's."""
        if pipeline is None or pipeline.explained:
            self._before_with_shapes()
            return
        self._explaining = pipeline

        def explained() -> None:
            self._explaining = None
            self._before_with_shapes()
            self._show_properties(self.selection.current)
            self.presentation.refresh()

        # They live as long as the fusion (frozen at its end, gui.model_jobs): out of the collector's view too, as
        # they are made. Left in it, on the 100k graph, the idle window's collection (_give_back_memory) walked them
        # and whatever else they made (one call of 109 ms), and one full collection among the slices took 150 ms.
        QTimer.singleShot(1, self, lambda: run_in_slices(  # the first slice in the next turn, not the list's
            self, frozen_as_made(pipeline.explanation_steps(), EXPLAINED_FROZEN_EVERY), seconds=EXPLAIN_SLICE_S,
            at_least=1,
            current=lambda: self._explaining is pipeline, done=explained))

    def _lay_out_after(self) -> None:
        """The fused graph's first layout, with the before pane's scopes collapsed (relayout's `like`): a graph
        fused at load can be fused before the before pane has chosen its overview's scopes, and the after pane
        then waits for them (_on_laid_out, or _on_layout_dropped when that layout ends otherwise); laid out
        first, it kept a scope overview of its own that the before pane's never changed."""
        if self._after_pending and not (self.session.collapsed["before"] is None
                                        and self.workers.running("layout-before")):
            self._after_pending = False
            self.relayout("after")

    # ---- opening ------------------------------------------------------------------------------------
    def open_model(self, spec: str) -> None:
        self.statusBar().showMessage(f"Loading {spec}…")
        self.session.start_loading()
        self.jobs.load(spec, lambda model: self._on_loaded(spec, model))

    def open_when_painted(self, spec: str) -> None:
        """Open `spec` once the window has painted itself (the model named on the command line): the loader
        beside the first paint, whose widgets' Python calls waited for the interpreter lock, stalled it 100-210 ms."""
        self._open_after_paint = spec

    @safe_override()
    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self._background_timer is None:
            self._start_background_soon()
        if self._open_after_paint is not None:
            spec, self._open_after_paint = self._open_after_paint, None
            # A 1 ms timer, so the timers due by then run first (a 0 ms one is a posted call, delivered ahead).
            QTimer.singleShot(1, self, lambda: self.open_model(spec))

    @safe_override()
    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    @safe_override()
    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                if not self.run_panel.files.take_drop(url.toLocalFile()):  # a profile or run file: imported
                    self.open_model(url.toLocalFile())
                return

    def _give_back_memory(self) -> None:
        """Once the window is idle after a model opened (the last one's scene and rows deleted in slices), the
        pages they were freed from go back to the system (gui.memory)."""
        if self._work_done():
            self._memory_timer.stop()
            gc.collect()  # what is not frozen: little but the last model's cyclic garbage (see Pane._show)
            give_back_freed_memory()

    def _start_background_soon(self) -> None:
        """From the first paint on, look four times a second whether the helper and the probe may start."""
        self._shown_at = self._idle_since = time.monotonic()
        self._background_timer = QTimer(self)
        self._background_timer.timeout.connect(self._background_tick)
        self._background_timer.start(250)

    def _background_tick(self) -> None:
        now = time.monotonic()
        if self._open_after_paint is not None or not self.is_idle():
            self._idle_since = now
        if now - self._idle_since >= BACKGROUND_IDLE_S or now - self._shown_at >= BACKGROUND_LATEST_S:
            self._start_background()

    def _start_background(self) -> None:
        """Start the TensorFlow helper and the backend probe, once (a request that needs the helper earlier
        starts it itself: TensorFlowHelper.call)."""
        if self._background_started:
            return
        self._background_started = True
        if self._background_timer is not None:
            self._background_timer.stop()
        self.tensorflow.start()
        BACKEND_PROBE.start()

    def _on_loaded(self, spec: str, model: LoadedModel) -> None:
        self.recent.remember(spec)
        self.session.set_model(model)
        if len(model.graph) <= EARLY_FUSION_NODES and not fusion_needs_tensorflow(model.graph):
            # in the next turn of the event loop: this one's work (the panes cleared, the first layout started),
            # sharing the interpreter lock with the fusion's worker, took twice as long (a 160-210 ms stall)
            QTimer.singleShot(0, self, self._fuse_first)

    # ---- fusion: the session's jobs (gui/model_jobs.py) ---------------------------------------------
    def set_config(self, config: PassConfig) -> None:
        """A new pass configuration (the pass panel, an import): fuse again with it."""
        job = self.session.set_config(config)
        if job is not None:
            self.jobs.fuse(job)

    def _follow_when_painted(self) -> None:
        """The after pane follows the before pane's new scopes once that pane is painted: its layout
        worker beside that paint (the picture of the whole 20k-node graph) shared the interpreter lock
        with it, and the paint took 2-3x as long."""
        if not self.before.isVisible():
            self._follow_collapsed()
            return
        self._after_waits_for_paint = True
        QTimer.singleShot(500, self, self._after_follows)  # in case the pane is not painted (minimised)

    def _after_follows(self) -> None:
        if self._after_waits_for_paint:
            self._after_waits_for_paint = False
            self._follow_collapsed()

    def _on_before_painted(self) -> None:
        """Fusion of a newly opened model starts once its original graph is on screen (unless it started at load:
        _on_loaded), and the after pane follows its new scopes (_follow_when_painted) once the rest of the window is
        painted too.

        Fusion may import TensorFlow, whose import holds the GIL for long stretches; running it
        next to the first layout and scene build would delay the first picture by seconds.
        """
        if self._after_waits_for_paint:
            QTimer.singleShot(0, self, self._after_follows)
        self._fuse_first()

    def _fuse_first(self) -> None:
        job = self.session.first_fusion()
        if job is not None:
            self.jobs.fuse(job)

    def _on_shapes(self) -> None:
        """A pane drawn or being drawn without shapes: once more, with them. The fused graph's first layout
        may still be waiting for the match list (_show_pipeline): it will have them. The before pane's waits
        until the after pane is drawn and its matches explained: beside the after pane's layout worker, on the
        100k-node bare graph, the two workers shared the interpreter lock and the after pane came 0.5 s later."""
        for side, pane in self.panes.items():
            if pane.asked_with_shapes or (side == "after" and self._after_pending):
                continue
            if side == "before" and (self._results_pending is not None or self._explaining is not None):
                self._before_waits_for_explanations = True
                continue
            self.relayout(side)

    def _before_with_shapes(self) -> None:
        """The before pane's layout with shapes that waited for the after pane and the explanations (_on_shapes)."""
        if self._before_waits_for_explanations:
            self._before_waits_for_explanations = False
            if not self.panes["before"].asked_with_shapes:
                self.relayout("before")

    # ---- layout -------------------------------------------------------------------------------------
    def relayout(self, side: str) -> None:
        graph, collapsed = self.session.graph(side), self.session.collapsed
        if graph is not None:
            provenance = self.session.pipeline.provenance if self.session.pipeline else None
            like = collapsed["before"] if side == "after" and collapsed["after"] is None else None
            self.panes[side].relayout(graph, collapsed[side], diff_status(side, provenance), like)

    def _on_laid_out(self, side: str, layout: Layout) -> None:
        """A pane shows a new layout; an automatic collapse (a big graph's overview) becomes the session's."""
        if self.session.collapsed[side] != layout.collapsed:
            self.session.set_collapsed(side, layout.collapsed)
        if side == "before":
            self._lay_out_after()  # if it waited for these scopes
        self.layout_done.emit(side)

    def open_scopes(self, scopes: set[str]) -> None:
        """Expand these collapsed scopes in both panes (a big scope opens with its sub-scopes collapsed)."""
        for side, pane in self.panes.items():
            layout, graph, collapsed = pane.shown, pane.graph, self.session.collapsed[side]
            if layout is None or graph is None or collapsed is None or not scopes & collapsed:
                continue
            for scope in scopes & collapsed:
                box = layout.nodes.get(SCOPE_PREFIX + scope)
                inside = [drawn_name(graph, n) for n in box.members] if box is not None else []
                collapsed = expand_scope(inside, collapsed, scope)
            self.session.set_collapsed(side, collapsed)

    def _on_built(self, side: str) -> None:
        """A pane's new scene is complete: re-apply diff, selection and search hits, then announce it."""
        if self._following.pop(side, None) is not None and side == "before":
            self._follow_when_painted()  # the after pane's turn
        view = self.panes[side].view
        pipeline = self.session.pipeline  # fusion may have finished while the scene was being built
        self.panes[side].apply_diff(pipeline.provenance if pipeline else None)
        current = self.selection.current
        centre = side in self._centre_when_built  # a scope opened for the selection: now it can be centred
        if view.set_selected(current.before if side == "before" else current.after, centre=centre):
            self._centre_when_built.discard(side)
        if self.search.text():
            self.search_hits.refresh()
        if side == "before" and self.session.stage is Stage.DRAWING:
            QTimer.singleShot(500, self._on_before_painted)  # in case the pane is not painted (hidden)

    def _on_layout_error(self, text: str) -> None:
        self._on_before_painted()  # the fused graph is still worth computing
        show_error(self, "Layout failed", text, self.statusBar())

    def fit_both(self) -> None:
        self.before.fit()
        self.after.fit()

    # ---- selection ----------------------------------------------------------------------------------
    def select_key(self, side: str, key: str, *, toggle: bool = False) -> None:
        """Select what a pane's box stands for; `toggle` (Ctrl+click): add it to that pane's selection, or take
        it out (several nodes: a pattern to start a pass from, File > New pass from selection)."""
        layout = self.panes[side].shown
        if layout is None or key not in layout.nodes:
            return
        names = frozenset(layout.nodes[key].members)
        if toggle:
            current = self.selection.current.before if side == "before" else self.selection.current.after
            names = current - names if names <= current else current | names
        if side == "before":
            self.selection.select_original(names)
        else:
            self.selection.select_fused(names)

    def _on_selection(self, selection: Selection) -> None:
        centre_all = selection.origin not in SIDES
        self._centre_when_built = set()
        if centre_all:  # a match, a search hit or a kernel inside a collapsed scope: open it
            hidden = set()
            for side, names in (("before", selection.before), ("after", selection.after)):
                graph, collapsed = self.session.graph(side), self.session.collapsed[side]
                if graph is not None and collapsed:
                    hidden |= hidden_in(collapsed, (drawn_name(graph, n) for n in names if n in graph))
            if hidden:
                self._centre_when_built = {side for side in SIDES if hidden & (self.session.collapsed[side] or set())}
                self.open_scopes(hidden)
        self.before.set_selected(selection.before, centre=centre_all or selection.origin == "after")
        self.after.set_selected(selection.after, centre=centre_all or selection.origin == "before")
        self._show_properties(selection)
        if isinstance(selection.item, NearMiss):
            self.why_not.show(selection.item, self._in_original)
        else:
            self.why_not.clear()

    def _show_properties(self, selection: Selection) -> None:
        pipeline = self.session.pipeline
        self.properties.show_selection(selection, self.session.graph("before"), self.session.graph("after"),
                                       pipeline.provenance if pipeline else None)

    def _in_original(self, names: Iterable[str]) -> set[str]:
        """Names a pass saw, in the original graph: a node an earlier pass created stands for its origins."""
        names, original = list(names), self.session.graph("before")
        found = {n for n in names if original is not None and n in original}
        return found | self.selection.to_original(n for n in names if n not in found)

    def step_match(self, delta: int, kind: type[Match] | type[NearMiss] = Match) -> None:
        if self.match_list.step(delta, kind) is None:
            what = "matches" if kind is Match else "near misses"
            self.statusBar().showMessage(f"No {what} to step through", 3000)

    def _on_activated(self, side: str, key: str) -> None:
        """A double-click or Enter: a scope box opens in place in both panes (an open one closes); a
        fused node opens its body in place (again: closes it) and is selected, which lights the
        original nodes in the before pane."""
        pane = self.panes[side]
        node = pane.shown.nodes.get(key) if pane.shown is not None else None
        if node is None:
            return
        if node.scope:
            if node.open:
                self.close_scopes({node.scope})
            else:
                self.open_scopes({node.scope})
            return
        provenance = self.session.pipeline.provenance if self.session.pipeline else None
        if pane.toggle_open(key, diff_status(side, provenance)):
            self.select_key(side, key)

    def close_scopes(self, scopes: set[str]) -> None:
        """Collapse these scopes again in both panes (a scope opened in place closes in place)."""
        for side in self.panes:
            collapsed = self.session.collapsed[side]
            if collapsed is not None and not scopes <= collapsed:
                self.session.set_collapsed(side, collapsed | scopes)

    @safe_override()
    def closeEvent(self, event) -> None:
        self.presentation.leave()  # the look is every view's (NodeItem.look): a closed window must not keep it
        self._stop_reporting()
        self.workers.shutdown()
        super().closeEvent(event)
