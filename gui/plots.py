"""The pyqtgraph plots of gui.charts: per-kernel bars of one graph, one step's timeline, each fusion's gain.

Apart from gui.charts so that pyqtgraph (~0.3 s to import) is imported when the first run result is
shown, not before the window's first paint: gui.charts makes these plots then.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QToolTip, QWidget

from fuselens.core.graph.opclass import BORDER, PALETTE, Category
from fuselens.core.measure.result import GraphRun, KernelStat, RunResult, TimelineEvent
from fuselens.core.runtime.run_view import (
    SIDE_OF_LABEL,
    common_scope,
    format_us,
    kernel_category,
    per_step_us,
    short_name,
    timeline_lanes,
    top_kernels,
)
from fuselens.session.fusion_gain import FusionGain

SIDE_TITLES = {"before": "Before (original)", "after": "After (fused)"}

BAR_HEIGHT = 0.72
LABEL_WIDTH = 40  # characters of a kernel name on the bar chart's axis
AXIS_WIDTH = 270  # pixels, the same in both bar charts so their bars line up
SELECTED_PEN = pg.mkPen("#111111", width=2.5)  # cosmetic: pixels, not µs

pg.setConfigOptions(antialias=True, background="w", foreground="#333333")


def _tick_font() -> QFont:
    font = QFont()
    font.setPointSizeF(8.5)
    return font


class _ClickablePlot(pg.PlotWidget):
    """A plot with fixed axes whose items are found under the mouse (hover tooltip, click)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.getPlotItem().showGrid(x=True, y=False, alpha=0.25)
        for name in ("left", "bottom"):
            self.getAxis(name).setStyle(tickFont=_tick_font())
        self.scene().sigMouseMoved.connect(self._on_moved)
        self.scene().sigMouseClicked.connect(self._on_clicked)
        self.setMinimumHeight(150)

    def view_point(self, scene_pos: QPointF) -> QPointF:
        return self.getPlotItem().vb.mapSceneToView(scene_pos)

    def hit(self, point: QPointF) -> int | None:
        raise NotImplementedError

    def tooltip(self, index: int) -> str:
        raise NotImplementedError

    def clicked(self, index: int) -> None:
        raise NotImplementedError

    def widget_pos(self, x: float, y: float) -> QPoint:
        """Where a data point is in widget coordinates (tests click there)."""
        return self.mapFromScene(self.getPlotItem().vb.mapViewToScene(QPointF(x, y)))

    def _on_moved(self, scene_pos: QPointF) -> None:
        if not self.getPlotItem().vb.sceneBoundingRect().contains(scene_pos):
            QToolTip.hideText()
            return
        index = self.hit(self.view_point(scene_pos))
        if index is None:
            QToolTip.hideText()
        else:
            QToolTip.showText(self.mapToGlobal(self.mapFromScene(scene_pos)), self.tooltip(index), self)

    def _on_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        index = self.hit(self.view_point(event.scenePos()))
        if index is not None:
            self.clicked(index)


class KernelBars(_ClickablePlot):
    """The top kernels of one graph as horizontal bars (time per step), slowest at the top."""

    kernel_clicked = Signal(str, object)  # side, KernelStat

    def __init__(self, side: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.side = side
        self.run: GraphRun | None = None
        self.kernels: list[KernelStat] = []
        self.values: list[float] = []
        self._selected: frozenset[str] = frozenset()
        self._items: list[pg.GraphicsObject] = []
        plot = self.getPlotItem()
        plot.setTitle(SIDE_TITLES[side], size="10pt")
        plot.setLabel("bottom", "time per step (µs)")
        plot.invertY(True)
        self.getAxis("left").setWidth(AXIS_WIDTH)

    def set_run(self, run: GraphRun | None, top_n: int) -> None:
        self.run = run
        self.kernels = top_kernels(run, top_n) if run else []
        self.values = [per_step_us(k, run) for k in self.kernels]
        self._draw()

    def highlight(self, nodes: frozenset[str]) -> None:
        """Outline the bars of these nodes' kernels; redrawn only when that changes the outlines (a
        selection is made per match step, and a redraw of the plot costs ~10 ms)."""
        charted = {k.node for k in self.kernels}
        changed = (nodes & charted) != (self._selected & charted)
        self._selected = nodes
        if changed:
            self._draw()

    def categories(self) -> list[Category]:
        return [kernel_category(k.op_type, k.pass_id) for k in self.kernels]

    def _draw(self) -> None:
        plot = self.getPlotItem()
        for item in self._items:
            plot.removeItem(item)
        self._items = []
        count = len(self.kernels)
        scope = common_scope(k.kernel for k in self.kernels) if count > 1 else ""
        self.getAxis("left").setTicks([[(i, short_name(k.kernel, LABEL_WIDTH, scope))
                                        for i, k in enumerate(self.kernels)]])
        title = SIDE_TITLES[self.side] + (f"  <span style='color:#777'>(names under {scope})</span>" if scope else "")
        plot.setTitle(title, size="10pt")
        if not count:
            empty = pg.TextItem("no kernels: run or import a profile", color="#777777", anchor=(0.5, 0.5))
            empty.setPos(0.5, 0.5)
            plot.addItem(empty)
            self._items.append(empty)
            plot.setYRange(0, 1)
            return
        categories = self.categories()
        pens = [SELECTED_PEN if k.node in self._selected else pg.mkPen(BORDER[c])
                for k, c in zip(self.kernels, categories)]
        bars = pg.BarGraphItem(x0=0, y=list(range(count)), height=BAR_HEIGHT, width=self.values,
                               brushes=[pg.mkBrush(PALETTE[c]) for c in categories], pens=pens)
        self._items.append(bars)
        fused = [i for i, k in enumerate(self.kernels) if k.pass_id is not None]
        if fused:
            self._items.append(pg.BarGraphItem(
                x0=0, y=fused, height=BAR_HEIGHT, width=[self.values[i] for i in fused], pen=pg.mkPen(None),
                brushes=[QBrush(QColor(BORDER[categories[i]]), Qt.BrushStyle.BDiagPattern) for i in fused]))
        top = max(self.values) or 1.0
        for i, value in enumerate(self.values):
            label = pg.TextItem(format_us(value), color="#333333", anchor=(0, 0.5))
            label.setFont(_tick_font())
            label.setPos(value + top * 0.01, i)
            self._items.append(label)
        for item in self._items:
            plot.addItem(item)
        plot.setYRange(-0.6, max(count, 4) - 0.4, padding=0)

    def hit(self, point: QPointF) -> int | None:
        index = round(point.y())
        if 0 <= index < len(self.kernels) and abs(point.y() - index) <= BAR_HEIGHT / 2 \
                and 0 <= point.x() <= max(self.values[index], max(self.values) * 0.05):
            return index
        return None

    def tooltip(self, index: int) -> str:
        k = self.kernels[index]
        node = k.node or "not mapped to a graph node"
        made = f"<br>made by {k.pass_id}" if k.pass_id else ""
        return (f"<b>{k.kernel}</b><br>{k.op_type} on {k.device}; node {node}{made}<br>"
                f"{format_us(self.values[index])} per step, {k.count} launches<br>"
                f"mean {format_us(k.mean_us)}, min {format_us(k.min_us)}, max {format_us(k.max_us)}")

    def clicked(self, index: int) -> None:
        self.kernel_clicked.emit(self.side, self.kernels[index])


class TimelinePlot(_ClickablePlot):
    """One step of each graph as a Gantt chart: a row per device lane, kernels as blocks in time."""

    kernel_clicked = Signal(str, object)  # side, TimelineEvent

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[tuple[str, TimelineEvent, int]] = []  # side, event, row
        self._items: list[pg.GraphicsObject] = []
        plot = self.getPlotItem()
        plot.setLabel("bottom", "time from the step's first kernel (µs)")
        plot.invertY(True)
        self.getAxis("left").setWidth(150)

    def set_result(self, result: RunResult | None) -> None:
        plot = self.getPlotItem()
        for item in self._items:
            plot.removeItem(item)
        self._items, self.rows, ticks = [], [], []
        base = 0
        for label, run in (result.graphs.items() if result else ()):
            side = SIDE_OF_LABEL.get(label, "after")
            lanes, devices = timeline_lanes(run.timeline)
            self.rows += [(side, event, base + lane) for event, lane in zip(run.timeline, lanes)]
            ticks += [(base + lane, f"{label} · {device}" if lane == devices.index(device) else "")
                      for lane, device in enumerate(devices)]
            base += len(devices) + 1
        self.getAxis("left").setTicks([ticks])
        if not self.rows:
            plot.setTitle("no timeline", size="9pt")
            return
        plot.setTitle("one step per graph", size="9pt")
        categories = [kernel_category(e.op_type, e.pass_id) for _, e, _ in self.rows]
        blocks = pg.BarGraphItem(
            x0=[e.start_us for _, e, _ in self.rows], width=[max(e.dur_us, 0.01) for _, e, _ in self.rows],
            y=[row for _, _, row in self.rows], height=0.8,
            brushes=[pg.mkBrush(PALETTE[c]) for c in categories], pens=[pg.mkPen(BORDER[c]) for c in categories])
        self._items.append(blocks)
        plot.addItem(blocks)
        plot.setYRange(-0.6, base - 1.4, padding=0)
        plot.setXRange(0, max(e.start_us + e.dur_us for _, e, _ in self.rows), padding=0.02)

    def hit(self, point: QPointF) -> int | None:
        row = round(point.y())
        found = [i for i, (_, e, r) in enumerate(self.rows) if r == row and e.start_us <= point.x() <= e.start_us
                 + max(e.dur_us, self._min_width())]
        return found[0] if found else None

    def _min_width(self) -> float:
        """A block narrower than 3 pixels is still hit within 3 pixels."""
        (x0, x1), width = self.getPlotItem().vb.viewRange()[0], max(self.getPlotItem().vb.width(), 1.0)
        return 3 * (x1 - x0) / width

    def tooltip(self, index: int) -> str:
        side, e, _ = self.rows[index]
        return (f"<b>{e.kernel}</b> ({SIDE_TITLES[side]})<br>{e.op_type} on {e.device}; node {e.node or '—'}<br>"
                f"start {format_us(e.start_us)}, duration {format_us(e.dur_us)}")

    def clicked(self, index: int) -> None:
        side, event, _ = self.rows[index]
        self.kernel_clicked.emit(side, event)


WIN_COLOUR, LOSS_COLOUR = "#1565c0", "#c62828"  # blue and red: told apart by colour-blind readers too


def gain_tick(anchor: str, scope: str) -> str:
    """A fusion's axis label: its anchor without `scope`, cut in the middle so the block that tells it apart
    (`block_4_depthwise_BN_1`) stays, and its op too when there is room; `(+1 more)` of a group as `+1`."""
    name, _, more = anchor.partition(" (+")
    name, suffix = name.removeprefix(scope), f" +{more.split()[0]}" if more else ""
    width = LABEL_WIDTH - len(suffix) - 2  # pyqtgraph leaves out a label wider than the axis
    parts = name.split("/")
    if len(name) > width and len(parts) > 2:
        name = f"{parts[0]}/…/{parts[-1]}"
    if len(name) > width and len(parts) > 1 and len(parts[0]) < width - 2:
        name = f"{parts[0]}/…"
    return short_name(name, width) + suffix


class GainBars(_ClickablePlot):
    """Each fusion's gain per step (baseline - fused kernel time), biggest win at the top, losses in red."""

    gain_clicked = Signal(object)  # FusionGain

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[FusionGain] = []
        self._items: list[pg.GraphicsObject] = []
        plot = self.getPlotItem()
        plot.setLabel("bottom", "time saved per step (µs): baseline kernels − fused kernels")
        plot.invertY(True)
        self.getAxis("left").setWidth(AXIS_WIDTH)

    def set_rows(self, rows: list[FusionGain]) -> None:
        self.rows = [r for r in rows if r.gain_us is not None]
        plot = self.getPlotItem()
        for item in self._items:
            plot.removeItem(item)
        self._items = []
        anchors = [r.label.split(":", 1)[-1] for r in self.rows]
        scope = common_scope(anchors) if len(anchors) > 1 else ""
        self.getAxis("left").setTicks([[(i, gain_tick(a, scope)) for i, a in enumerate(anchors)]])
        plot.setTitle("Did each fusion pay?" + (f"  <span style='color:#777'>(names under {scope})</span>"
                                                if scope else ""), size="10pt")
        if not self.rows:
            empty = pg.TextItem("no fusion measured on both sides", color="#777777", anchor=(0.5, 0.5))
            empty.setPos(0.5, 0.5)
            self._items.append(empty)
            plot.addItem(empty)
            plot.setYRange(0, 1)
            return
        gains = [r.gain_us for r in self.rows]
        colours = [WIN_COLOUR if g >= 0 else LOSS_COLOUR for g in gains]
        self._items.append(pg.BarGraphItem(
            x0=[min(g, 0.0) for g in gains], width=[abs(g) for g in gains], y=list(range(len(gains))),
            height=BAR_HEIGHT, brushes=[pg.mkBrush(c) for c in colours], pens=[pg.mkPen(c) for c in colours]))
        low, high = min(0.0, *gains), max(0.0, *gains)
        span = (high - low) or 1.0
        for i, row in enumerate(self.rows):
            text = f"{'+' if row.gain_us >= 0 else '−'}{format_us(abs(row.gain_us))}" + \
                   (f"  {row.ratio:.2f}×" if row.ratio is not None else "") + ("  ⚠" if row.missing else "")
            label = pg.TextItem(text, color="#333333", anchor=(0, 0.5) if row.gain_us >= 0 else (1, 0.5))
            label.setFont(_tick_font())
            label.setPos(row.gain_us + (span if row.gain_us >= 0 else -span) * 0.01, i)
            self._items.append(label)
        for item in self._items:
            plot.addItem(item)
        # room for the value labels on both sides of zero
        self.setXRange(low - (span * 0.32 if low < 0 else 0), high + span * 0.32, padding=0)
        plot.setYRange(-0.6, max(len(gains), 4) - 0.4, padding=0)

    def hit(self, point: QPointF) -> int | None:
        index = round(point.y())
        if not (0 <= index < len(self.rows)) or abs(point.y() - index) > BAR_HEIGHT / 2:
            return None
        gain = self.rows[index].gain_us
        (x0, x1) = self.getPlotItem().vb.viewRange()[0]
        reach = max(abs(gain), (x1 - x0) * 0.02)  # a bar near zero is still hit a little beside it
        return index if (0 <= point.x() <= reach if gain >= 0 else -reach <= point.x() <= 0) else None

    def tooltip(self, index: int) -> str:
        row = self.rows[index]
        lines = [f"<b>{row.label}</b>",
                 f"baseline {format_us(row.baseline_us)} in {len(row.baseline_kernels)} kernel(s) → "
                 f"fused {format_us(row.fused_us)} in {len(row.fused_kernels)}",
                 f"fused: {', '.join(row.fused_kernels[:4])}"]
        lines += [text for text in (row.missing_text(), *row.notes) if text]
        if row.inside:
            lines.append(f"{len(row.inside)} original node(s) ran inside another node's kernel in the baseline")
        return "<br>".join(lines)

    def clicked(self, index: int) -> None:
        self.gain_clicked.emit(self.rows[index])
