"""Run results as charts: summary cards, per-kernel bars before and after, one step's timeline, each
fusion's gain (session/fusion_gain.py: did it pay?).

Colours are the op-class palette of the graph panes (core.graph.opclass); kernels a fusion pass made
are hatched. Clicking a bar or a timeline block emits the kernel's graph node; the run panel turns
that into the shared selection, and `highlight` outlines the bars of whatever is selected. The
plots themselves (gui.plots, pyqtgraph) are made with the first result shown: the run dock is
built with the window, and pyqtgraph's import would delay its first paint by ~0.3 s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from fuselens.core.graph.opclass import BORDER, CATEGORY_TITLES, PALETTE, Category
from fuselens.core.measure.result import KernelStat, RunResult
from fuselens.core.runtime.run_view import SIDE_OF_LABEL, Card, summary_cards
from fuselens.session import SIDES
from fuselens.session.fusion_gain import GainReport, headline, shown_rows

if TYPE_CHECKING:
    from fuselens.gui.plots import GainBars, KernelBars, TimelinePlot

TONES = {"good": ("#e8f5e9", "#2e7d32"), "bad": ("#fdecea", "#c62828"), "neutral": ("#f5f5f7", "#333333")}


def swatch_html(categories: Iterable[Category], hatched: bool) -> str:
    """The legend: a coloured square per op class shown, and the hatch mark for fused kernels."""
    swatch = ("<span style='background:{}; border:1px solid {}'>&nbsp;&nbsp;&nbsp;&nbsp;</span>"
              "&nbsp;{}&nbsp;&nbsp;&nbsp;")
    parts = [swatch.format(PALETTE[c], BORDER[c], CATEGORY_TITLES[c]) for c in categories]
    if hatched:
        parts.append("<b>////</b>&nbsp;made by a fusion pass")
    return "".join(parts)


class SummaryCards(QWidget):
    """A row of cards: step time before and after, speedup, numeric verdict per output."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.cards: list[Card] = []
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.set_result(None)

    def set_result(self, result: RunResult | None) -> None:
        while self._layout.count():
            widget = self._layout.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.cards = summary_cards(result) if result else [Card("No run yet", "—", "Compile and run, or import a "
                                                                "profile (op_summary CSV, PROF_* folder, run file)")]
        for card in self.cards:
            self._layout.addWidget(self._card(card), 1)

    @staticmethod
    def _card(card: Card) -> QFrame:
        background, accent = TONES.get(card.tone, TONES["neutral"])
        frame = QFrame()
        frame.setObjectName("card")
        frame.setStyleSheet(f"#card {{ background: {background}; border: 1px solid #d0d0d6; "
                            f"border-left: 4px solid {accent}; border-radius: 4px; }}")
        layout = QVBoxLayout(frame)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(0)
        title = QLabel(card.title)
        title.setStyleSheet("color: #555555; font-size: 8.5pt;")
        value = QLabel(card.value)
        value.setStyleSheet(f"color: {accent}; font-size: 13pt; font-weight: 600;")
        detail = QLabel(card.detail)
        detail.setStyleSheet("color: #444444; font-size: 8.5pt;")
        detail.setWordWrap(True)
        frame.setToolTip(f"{card.title}: {card.value}\n{card.detail}")
        for label in (title, value, detail):
            layout.addWidget(label)
        return frame


class KernelCharts(QWidget):
    """Before and after bar charts side by side on one time scale, with the op-class legend below."""

    kernel_clicked = Signal(str, object)  # side, KernelStat

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.bars: dict[str, KernelBars] = {}  # by side, made with the first result
        self.legend = QLabel(self)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self._row = QHBoxLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(self._row, 1)
        layout.addWidget(self.legend)

    def _make_bars(self) -> None:
        from fuselens.gui.plots import KernelBars

        self.bars = {side: KernelBars(side, self) for side in SIDES}
        self.bars["after"].setXLink(self.bars["before"])
        for chart in self.bars.values():
            chart.kernel_clicked.connect(self.kernel_clicked)
            self._row.addWidget(chart, 1)

    def set_result(self, result: RunResult | None, top_n: int) -> None:
        if not self.bars:
            if result is None:
                return
            self._make_bars()
        runs = {SIDE_OF_LABEL.get(label, "after"): run for label, run in (result.graphs.items() if result else ())}
        for side, chart in self.bars.items():
            chart.set_run(runs.get(side), top_n)
        values = [v for chart in self.bars.values() for v in chart.values]
        if values:
            self.bars["before"].setXRange(0, max(values) * 1.18, padding=0)  # room for the value labels
        shown = [c for c in PALETTE if any(c in chart.categories() for chart in self.bars.values())]
        hatched = any(k.pass_id for chart in self.bars.values() for k in chart.kernels)
        self.legend.setText(swatch_html(shown, hatched))

    def highlight(self, before: frozenset[str], after: frozenset[str]) -> None:
        for side, nodes in (("before", before), ("after", after)):
            if side in self.bars:
                self.bars[side].highlight(nodes)

    def shown_kernels(self, side: str) -> Sequence[KernelStat]:
        return self.bars[side].kernels if self.bars else []


class Timeline(QWidget):
    """One step of each graph as a Gantt chart (`plot`, made with the first result)."""

    kernel_clicked = Signal(str, object)  # side, TimelineEvent

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot: TimelinePlot | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    def set_result(self, result: RunResult | None) -> None:
        if self.plot is None:
            if result is None:
                return
            from fuselens.gui.plots import TimelinePlot

            self.plot = TimelinePlot(self)
            self.plot.kernel_clicked.connect(self.kernel_clicked)
            self._layout.addWidget(self.plot)
        self.plot.set_result(result)


class GainChart(QWidget):
    """Did each fusion pay? A bar per fusion (`plot`, made with the first report), and what it leaves out below."""

    gain_clicked = Signal(object)  # FusionGain

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot: GainBars | None = None
        self.report: GainReport | None = None
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #444444; font-size: 8.5pt;")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self._layout.addWidget(self.note)

    def set_report(self, report: GainReport | None, shown: int) -> None:
        self.report = report
        if self.plot is None:
            if report is None:
                return
            from fuselens.gui.plots import GainBars

            self.plot = GainBars(self)
            self.plot.gain_clicked.connect(self.gain_clicked)
            self._layout.insertWidget(0, self.plot, 1)
        rows = shown_rows(report, shown) if report is not None else []
        self.plot.set_rows(rows)
        self.note.setText(gain_note(report, len(self.plot.rows)) if report is not None else "")


def gain_note(report: GainReport, charted: int) -> str:
    """The line under the gain chart: the headline, how many bars of how many, what could not be measured."""
    parts = [headline(report)]
    if charted < sum(r.gain_us is not None for r in report.rows):
        parts.append(f"showing the {charted} at both ends (Top sets how many)")
    unmeasured = [r.label for r in report.rows if r.gain_us is None]
    if unmeasured:
        parts.append(f"not measured (no kernel on one side): {', '.join(unmeasured[:3])}"
                     + (f" and {len(unmeasured) - 3} more" if len(unmeasured) > 3 else ""))
    incomplete = sum(bool(r.missing) for r in report.rows)
    if incomplete:
        parts.append(f"⚠ {incomplete} with original nodes that have no kernel in the baseline (hover a bar)")
    return "; ".join(parts + report.notes)
