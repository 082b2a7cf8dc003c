"""`main.py` routes: a CLI word runs the CLI, anything else (or `gui`) opens the window."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from fuselens import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def opened(monkeypatch):
    """A stand-in window module: routing is tested without importing the GUI."""
    calls = []
    window = types.ModuleType("fuselens.gui.app")
    window.run_gui = lambda model=None, py_passes=(): calls.append(model if not py_passes else (model, py_passes)) or 0
    monkeypatch.setitem(sys.modules, "fuselens.gui.app", window)
    return calls


@pytest.mark.parametrize(("argv", "model"), [([], None), (["demo"], "demo"), (["gui"], None),
                                             (["gui", "conv_bn"], "conv_bn"), (["./some/model.pb"], "./some/model.pb")])
def test_no_command_or_gui_opens_the_window(opened, argv, model):
    assert main.main(argv) == 0
    assert opened == [model]


def test_the_window_takes_pass_files_to_watch(opened, capsys):
    assert main.main(["gui", "conv_bn", "--py-pass", "a.py", "--py-pass=passes/"]) == 0
    assert main.main(["demo", "--py-pass", "a.py"]) == 0
    assert opened == [("conv_bn", ["a.py", "passes/"]), ("demo", ["a.py"])]
    assert main.main(["gui", "demo", "--py-pass"]) == 2  # no path after it
    assert "[--py-pass PATH]" in capsys.readouterr().err


def test_a_cli_word_runs_the_cli_not_the_window(opened, capsys):
    assert main.main(["samples"]) == 0
    assert "abs_relu_exp" in capsys.readouterr().out and opened == []


def test_two_models_or_an_option_for_the_window_is_a_usage_error(opened, capsys):
    assert main.main(["gui", "a.pb", "b.pb"]) == 2
    assert main.main(["gui", "--bogus"]) == 2
    assert capsys.readouterr().err.count("usage: fuselens [gui] [MODEL]") == 2 and opened == []


def test_help_lists_the_commands_and_says_how_to_open_the_window(capsys):
    with pytest.raises(SystemExit) as exit_:
        main.main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "fuse" in out and "fuselens gui [MODEL]" in out


def test_without_a_display_the_window_command_says_so_instead_of_a_qt_abort():
    import fuselens.gui.app

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "demo"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == fuselens.gui.app.NO_DISPLAY
