"""The README's remote-run screenshots, against the loopback test host (tests/ssh_host.py):
docs/screenshots/remote_hosts.png (the host dialog after Test connection),
docs/screenshots/remote_run.png (the window after a finished run of abs_relu_exp on that host) and
docs/screenshots/predicted_vs_actual.png (demo after a run there: its Predicted vs actual tab, a row selected).

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_remote_run.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, wait


def settle(app) -> None:
    """Let the window paint what it was just given."""
    for _ in range(20):
        app.processEvents()
        time.sleep(0.05)


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="fuselens-shots-"))
    os.environ["FUSELENS_CONFIG_DIR"] = str(tmp / "config")
    os.environ["FUSELENS_DATA_DIR"] = str(tmp / "data")
    from PySide6.QtWidgets import QApplication

    from fuselens.gui.main_window import MainWindow
    from fuselens.gui.remote_run import REMOTE
    from fuselens.session.remote_run import HostStore
    from tests.ssh_host import start_sshd, write_fake_ascend_host

    sshd = start_sshd(tmp / "sshd")
    try:
        setup = write_fake_ascend_host(tmp / "ascend")
        HostStore().put(sshd.host("ascend-lab", f"source {setup}"))
        app = QApplication.instance() or QApplication([])
        window = MainWindow()
        window.resize(1560, 960)
        window.show()
        window.open_model("abs_relu_exp")
        wait(app, lambda: window.is_idle() and window.session.pipeline is not None
             and window.panes["after"].shown is not None, 120)
        panel = window.run_panel
        panel.remote.reload_hosts("ascend-lab")
        panel.backend.setCurrentIndex(panel.backend.findData(REMOTE))
        panel.steps.setValue(20)
        panel.warmup.setValue(2)
        dialog = panel.remote.edit_hosts()
        dialog.hosts.setCurrentIndex(dialog.hosts.findData("ascend-lab"))
        dialog.test_connection()
        wait(app, lambda: dialog.test_button.isEnabled(), 60)
        dialog.grab().save(str(OUT / "remote_hosts.png"))
        dialog.close()
        panel.start_run()
        wait(app, lambda: not panel.running(), 300)
        panel.remote.log.hide()
        panel.tabs.setCurrentWidget(panel.charts)
        settle(app)
        window.grab().save(str(OUT / "remote_run.png"))

        window.open_model("demo")
        wait(app, lambda: window.is_idle() and window.session.model.name == "demo"
             and window.panes["after"].shown is not None, 120)
        panel.start_run()
        wait(app, lambda: not panel.running(), 400)
        panel.remote.log.hide()
        view = panel.check_view
        rows = view.shown_rows()
        view.click_row(next(i for i, r in enumerate(rows) if r.pass_id == "ConvBatchnormFusionPass"))
        settle(app)
        window.grab().save(str(OUT / "predicted_vs_actual.png"))
        window.close()
    finally:
        sshd.stop()
    print(f"wrote {OUT / 'remote_hosts.png'}, {OUT / 'remote_run.png'} and {OUT / 'predicted_vs_actual.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
