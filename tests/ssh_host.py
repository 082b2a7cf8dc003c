"""A loopback "Ascend host" for the remote-run tests: an sshd of the test's own on 127.0.0.1 with a generated
key, and on its far side the stub adapters and msprof of tests/npu_host.py plus a stub `npu-smi`, put on
PATH / PYTHONPATH by a set_env.sh as the toolkit's own would be.

`start_sshd(folder)` needs Debian's openssh-server at /usr/sbin/sshd (scripts/install-system-deps.sh
installs it); when it cannot run, `sshd_unavailable()` says why and the tests skip with that reason.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fuselens.core.ascend.remote import Host
from tests.npu_host import write_stub_host

SSHD = "/usr/sbin/sshd"
NPU_SMI = """#!/bin/sh
cat <<'EOF'
+---------------------------+---------------+----------------------------------------------------+
| npu-smi 23.0.rc2                 Version: 23.0.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.4        38                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 91.0        37                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
EOF
"""


def sshd_unavailable() -> str | None:
    """Why no test sshd can run here, or None."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing: apt-get install openssh-server (scripts/install-system-deps.sh does)"
    if not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        return "ssh / ssh-keygen missing: apt-get install openssh-client"
    if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
        try:
            Path("/run/sshd").mkdir(mode=0o755)
        except OSError as e:
            return f"sshd's privilege-separation folder /run/sshd cannot be made: {e}"
    return None


BROKEN_ADAPTER = "raise RuntimeError('stub npu_bridge: aclInit failed (error 507033): the device is not ready')\n"


def write_fake_ascend_host(folder: Path, *, msprof: bool = True, adapters: bool = True, broken: bool = False,
                           dumps: bool = True) -> Path:
    """The stub toolchain under `folder` and a set_env.sh for it; each fault asked for gets a set_env.sh of its own:
    without the stub msprof on PATH, without the adapters on PYTHONPATH, with an npu_bridge that fails when a run
    imports it, or with a toolchain that leaves no GE dumps."""
    write_stub_host(folder)
    (folder / "smi").mkdir(exist_ok=True)
    (folder / "smi" / "npu-smi").write_text(NPU_SMI)
    (folder / "smi" / "npu-smi").chmod(0o755)
    if broken:
        bad = folder / "broken_py" / "npu_bridge"
        bad.mkdir(parents=True, exist_ok=True)
        (bad / "__init__.py").write_text("")
        (bad / "npu_init.py").write_text(BROKEN_ADAPTER)
    bins = [str(folder / "smi")] + ([str(folder / "bin")] if msprof else [])
    root = Path(__file__).resolve().parents[1]
    paths = ([str(folder / "broken_py")] if broken else []) + ([str(folder / "py")] if adapters else []) + [str(root)]
    faults = [name for name, on in (("no_msprof", not msprof), ("no_adapters", not adapters), ("broken", broken),
                                    ("no_dumps", not dumps)) if on]
    script = folder.joinpath(*faults, "set_env.sh")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"export PATH={':'.join(bins)}:$PATH\nexport PYTHONPATH={':'.join(paths)}\n"
                      f"export FUSELENS_STUB_LOG={folder / 'log.jsonl'}\nexport TF_CPP_MIN_LOG_LEVEL=3\n"
                      + ("" if dumps else "export FUSELENS_STUB_NO_DUMPS=1\n"))
    return script


# A stand-in for the bundle's driver, fast (no TensorFlow): by its `mode` file it fails, runs slowly (with a side
# process, as the real driver's are), or, after FAKE_SLEEP seconds, puts the results folder the bundle carries in
# `prepared/` (written from FuseLens's own graphs by the test) where the driver puts its results.
FAKE_DRIVER = '''import os, shutil, subprocess, sys, time
mode = open("mode").read().strip()
print("== original: fake", flush=True)
if mode == "fail":
    print("Traceback: the adapter refused the graph", file=sys.stderr)
    sys.exit(4)
if mode == "slow":
    subprocess.Popen(["sleep", "300"])
    time.sleep(float(os.environ.get("FAKE_SLEEP", "300")))
if mode == "prepared":
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    print("== fused: fake", flush=True)
    shutil.copytree("prepared", "results")
else:
    os.makedirs("results/original", exist_ok=True)
    open("results/original/run.json", "w").write("{}")
print("done: bring back results", flush=True)
'''


def fake_bundle(folder: Path, mode: str) -> Path:
    """A bundle folder whose driver is FAKE_DRIVER in `mode` (for "prepared", fill `folder/prepared` first)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_on_npu.py").write_text(FAKE_DRIVER)
    (folder / "mode").write_text(mode)
    return folder


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Sshd:
    """A running test sshd and the client key it accepts."""

    process: subprocess.Popen[bytes]
    port: int
    key: Path
    folder: Path

    def host(self, name: str, setup: str, *, key: Path | None = None, **fields: str) -> Host:
        return Host(name=name, address=f"{getpass.getuser()}@127.0.0.1:{self.port}", identity_file=str(key or self.key),
                    work_dir=str(self.folder / "remote-work"), setup=setup, python=sys.executable,
                    ssh_options=[f"UserKnownHostsFile={self.folder / 'known_hosts'}"], **fields)

    def session_processes(self) -> list[int]:
        """The sshd processes serving connections now (the listener's descendants named sshd)."""
        found, todo = [], [self.process.pid]
        while todo:
            children = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True).stdout.split()
            for child in map(int, children):
                todo.append(child)
                if Path(f"/proc/{child}/comm").read_text().strip() == "sshd":
                    found.append(child)
        return found

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_sshd(folder: Path) -> Sshd:
    """A loopback sshd for the current user (a script's too, not only a test's: it makes /run/sshd as the tests'
    check does, and says why it cannot run)."""
    unavailable = sshd_unavailable()
    if unavailable:
        raise RuntimeError(unavailable)
    folder.mkdir(parents=True, exist_ok=True)
    host_key = _keygen(folder / "host_key")
    key = _keygen(folder / "client_key")
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    port = _free_port()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}", f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "StrictModes no", "UsePAM no",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", f"AllowUsers {getpass.getuser()}", "LogLevel ERROR", ""]))
    with open(folder / "sshd.log", "wb") as log:
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(folder / 'sshd.log').read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return Sshd(process, port, key, folder)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("sshd did not listen within 10 s")
