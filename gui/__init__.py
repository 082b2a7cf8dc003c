"""PySide6 + pyqtgraph widgets. No fusion logic lives here."""
