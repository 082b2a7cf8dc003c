"""Which backends this machine has, asked of a child process (the window's backend chooser).

Detection imports TensorFlow and the NPU adapter; doing it in a child keeps both out of the
window's process, as a run does. A probe that fails leaves CPU on and says why the others are off.
"""

from __future__ import annotations

import json
import subprocess
import sys

from fuselens.core.devices.backends import BACKENDS, BackendStatus
from fuselens.core.package_data import child_environ
from fuselens.core.runtime.childproc import ROOT

_PROBE = ("from fuselens.core.runtime.childproc import exit_with_parent; exit_with_parent(); "  # a killed window
          "import json; from fuselens.core.devices.backends import detect_backends; "
          "print(json.dumps([s.to_json() for s in detect_backends()]))")


def probe_backends(timeout: float = 120.0) -> list[BackendStatus]:
    """One status per backend, CPU always available."""
    env = child_environ(TF_CPP_MIN_LOG_LEVEL="3")
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        return [BackendStatus(r["name"], bool(r["available"]), r["reason"]) for r in rows]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError, TypeError) as e:
        why = f"the backend check failed ({type(e).__name__})"
        return [BackendStatus(name, name == "cpu", "TensorFlow on the host" if name == "cpu" else why)
                for name in BACKENDS]
