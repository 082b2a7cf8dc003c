"""The backend probe's child (it imports TensorFlow) ends with the process that asked: a window killed while the
probe runs leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fuselens.core.runtime.backend_probe import probe_backends


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_probe_child_ends_when_its_parent_is_killed():
    """The probe's work made to take a minute (as TensorFlow's import can on a loaded machine, or a driver that
    hangs): its child still ends within seconds of its parent's SIGKILL."""
    stuck = ("import fuselens.core.runtime.backend_probe as probe; "
             "probe._PROBE = probe._PROBE.replace('import json;', 'import time; time.sleep(60); import json;'); "
             "probe.probe_backends()")
    parent = subprocess.Popen([sys.executable, "-c", stuck])
    try:
        deadline = time.monotonic() + 60
        while not (children := _children(parent.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children, "the probe never started its child"
        time.sleep(0.5)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 15
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(c) for c in children), "the probe's child outlived the process that asked"
    finally:
        parent.kill()


def test_a_probe_says_cpu_is_there():
    assert any(s.name == "cpu" and s.available for s in probe_backends())
