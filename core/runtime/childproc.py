"""A Python child process (`python -m MODULE FD`) talked to over a socket: start, stop, why it died.

The runner's one-shot run children and the window's long-lived TensorFlow helper both live
here, so a TensorFlow crash, abort or out-of-memory kill ends only that child, and the caller
gets one worded line ("died from signal SIGSEGV; its last output: ...").
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection

from fuselens.core.package_data import child_environ, import_root

ROOT = import_root()
STDERR_TAIL_LINES = 3
KILL_WAIT_S = 5.0
PARENT_POLL_S = 1.0
# TensorFlow's start-up chatter, and the stack frames and banner it prints after a fatal log line (the
# line that says why, "F0000 ... abort_op.cc:...] Abort_op intentional failure; ...", is kept).
_TF_CHATTER = re.compile(r"^(?:[IW]\d{4} |WARNING: All log messages|To enable the following instructions"
                         r"|\s*@\s+0x|\*\*\* (?:Check failure stack trace|SIGABRT received))")


class ChildProcess:
    """One child running `python -m module FD`, with `conn` its end of the socket."""

    def __init__(self, module: str):
        ours, theirs = socket.socketpair()
        env = child_environ(TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child; stop() closes it)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr, env=env, cwd=str(ROOT))
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Kill the child (if it still runs) and release the socket and the stderr file."""
        if self.process.poll() is None:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(KILL_WAIT_S)
        self.conn.close()
        self.stderr.close()

    def death_reason(self) -> str:
        """How the child ended ("died from signal SIGSEGV", "exited with code 1 without a result")
        and the last lines it printed, TensorFlow's start-up chatter left out."""
        try:
            code = self.process.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            how = f"died from signal {name}" + (" (killed: out of memory?)" if name == "SIGKILL" else "")
        else:
            how = f"exited with code {code} without a result"
        self.stderr.seek(0)
        lines = [ln for ln in self.stderr.read().decode("utf-8", "replace").splitlines()
                 if ln.strip() and not _TF_CHATTER.match(ln)]
        tail = " | ".join(lines[-STDERR_TAIL_LINES:])
        return how + (f"; its last output: {tail[:400]}" if tail else "")


def exit_with_parent() -> None:
    """Called first in a child's main: the child ends (exit code 3) within PARENT_POLL_S of its parent's death.
    A parent killed with SIGKILL (an audit worker past its timeout, a Dask worker restarted, a window
    killed) runs no clean-up of its own, and a child stuck in TensorFlow (a model that never ends) would
    otherwise spin on, orphaned. A polling thread, not PR_SET_PDEATHSIG: that fires when the parent's
    *thread* ends, and the window starts children from pool threads that end when idle."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(3)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
