"""Opening the user's file at a line: the command each kind of editor takes, and a clear message without one."""

from __future__ import annotations

import sys

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.session.editor import editor_command, open_in_editor


def test_the_command_for_each_kind_of_editor():
    assert editor_command("/p/a.py", 12, {"EDITOR": "vim"}) == ["vim", "+12", "/p/a.py"]
    assert editor_command("/p/a.py", 12, {"EDITOR": "xterm -e nvim"}) == ["xterm", "-e", "nvim", "+12", "/p/a.py"]
    assert editor_command("/p/a.py", 3, {"EDITOR": "code -w"}) == ["code", "-w", "-g", "/p/a.py:3"]
    assert editor_command("/p/a.py", 3, {"EDITOR": "/usr/bin/subl"}) == ["/usr/bin/subl", "/p/a.py:3"]
    assert editor_command("/p/a.py", 3, {"EDITOR": "vim", "VISUAL": "emacs"})[0] == "emacs"


def test_no_editor_set_says_how_to_set_one():
    with pytest.raises(FuseLensError, match=r"set \$EDITOR .* to open /p/a\.py:7"):
        editor_command("/p/a.py", 7, {})


def test_the_editor_is_started_with_the_file_and_line(tmp_path):
    record = tmp_path / "args.txt"
    script = tmp_path / "editor.py"
    script.write_text(f"import sys; open({str(record)!r}, 'w').write(' '.join(sys.argv[1:]))\n")
    process = open_in_editor(str(tmp_path / "a.py"), 9, {"EDITOR": f"{sys.executable} {script}"})
    assert process.wait(30) == 0
    assert record.read_text() == f"+9 {tmp_path / 'a.py'}"
    with pytest.raises(FuseLensError, match="cannot start the editor"):
        open_in_editor("a.py", 1, {"EDITOR": str(tmp_path / "no-such-editor")})
