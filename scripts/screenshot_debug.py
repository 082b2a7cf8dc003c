"""The README's "Finding the fusion that broke it" screenshots, with the test-only faulty passes of
tests/sessions/fault_models.py registered in this process (the window mirrors them into its helper):

* docs/screenshots/layerwise_mobilenet_v2.png: MobileNetV2 with one depthwise+BN fold made wrong,
  after a run with Layerwise on: the match list's error column, the error heat overlay, the first
  divergent match selected;
* docs/screenshots/bisect_chain.png: a 40-block Conv+BN chain with one mis-folded match, after
  Run > Bisect…: the culprit selected in the match list and both panes, the result in the Bisect dock.

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_debug.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, wait


def settle(app, seconds: float = 1.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from fuselens.gui.main_window import MainWindow
    from fuselens.passes import registry
    from fuselens.passes.amct.depthwise_bn import DepthwiseConvBatchnormFusionPass
    from fuselens.passes.config import PassConfig
    from tests.sessions.fault_models import MisfoldingConvBn, MisfoldingDepthwiseBn, conv_bn_chain

    for cls in (MisfoldingConvBn, MisfoldingDepthwiseBn):
        registry._REGISTRY[cls.id] = cls
    app = QApplication.instance() or QApplication([])

    def ready(window) -> bool:
        return window.is_idle() and window.session.pipeline is not None and window.panes["after"].shown is not None

    def layerwise_run(window) -> None:
        panel = window.run_panel
        panel.steps.setValue(3)
        panel.warmup.setValue(1)
        panel.layerwise_box.setChecked(True)
        panel.start_run()
        wait(app, lambda: not panel.running(), 300)
        panel.heat_box.setChecked(True)

    config = (PassConfig.default().with_pass(DepthwiseConvBatchnormFusionPass.id, False)
              .with_pass(MisfoldingDepthwiseBn.id, True))
    window = MainWindow(config=config)
    window.resize(1560, 960)
    window.centralWidget().setSizes([470, 790, 300])  # room for the match list's error column
    window.show()
    window.open_model("mobilenet_v2")
    wait(app, lambda: ready(window), 300)
    layerwise_run(window)
    settle(app, 1)
    window.match_list.select_match(window.session.layerwise.first_divergent)
    settle(app, 2)
    window.match_list.scrollToItem(window.match_list.currentItem())
    window.grab().save(str(OUT / "layerwise_mobilenet_v2.png"))
    window.close()

    model = Path(tempfile.mkdtemp(prefix="fuselens-shots-")) / "conv_bn_chain.pb"
    model.write_bytes(conv_bn_chain().graph_def.SerializeToString())
    window = MainWindow(config=PassConfig.from_ids([MisfoldingConvBn.id]))
    window.resize(1560, 960)
    window.centralWidget().setSizes([470, 790, 300])
    window.show()
    window.open_model(str(model))
    wait(app, lambda: ready(window), 300)
    layerwise_run(window)
    window.debug_tools.show_bisect()
    window.debug_tools.bisect.start()
    wait(app, lambda: not window.debug_tools.bisect.running(), 600)
    settle(app, 2)
    window.grab().save(str(OUT / "bisect_chain.png"))
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
