"""docs/screenshots/toolchain_records.png: bert_layernorm with File > Import toolchain log… done twice (a plog that
says ScopeLayerNormPass did not match, then an OM model as JSON with one LayerNorm fused), the Predicted vs actual
tab showing each row's kind of record in its From column, the fused LayerNorm's row selected.

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_toolchain_records.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, ROOT, shown_window, wait

CORPUS = ROOT / "tests" / "corpus"


def main() -> int:
    app, window, _ = shown_window(1560, 960)
    from fuselens.gui.toolchain_records import ToolchainRecords  # once the window (and its settings) exist

    window.open_model("bert_layernorm")
    wait(app, lambda: window.is_idle() and window.session.pipeline is not None
         and window.panes["after"].shown is not None, 120)
    panel = window.run_panel
    records = panel.findChild(ToolchainRecords)
    view = panel.check_view
    log, model = CORPUS / "logs" / "plog-4913_20201105095233.log", CORPUS / "om_json" / "bert_layernorm_one_fused.json"
    for path in (log, model):
        before = view.report
        records.import_records([str(path)])
        wait(app, lambda before=before: view.report is not before, 60)
    rows = view.shown_rows()
    view.click_row(next(i for i, r in enumerate(rows) if r.node == "bert/encoder/layer_0/attention/output/LayerNorm"))
    for _ in range(20):
        app.processEvents()
        time.sleep(0.05)
    window.grab().save(str(OUT / "toolchain_records.png"))
    window.close()
    print(f"wrote {OUT / 'toolchain_records.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
