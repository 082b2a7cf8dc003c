"""Where an NPU bundle runs: this machine, or an Ascend host reached with the system's `ssh`.

Both transports run the same shell scripts (`shell(script)` is the only thing that differs, plus
how a folder is copied), so the launch, the progress stream, cancel and re-attach are written once:

* the bundle goes to WORK/<run id>/; the driver starts there under `setsid nohup`, after the host's
  set-up line, writing run.log, .pid (its process group) and, when it ends, .exit. The run therefore
  survives a lost connection and can be followed again (`follow`) or fetched later (`fetch`);
* `follow` streams run.log until the process group ends, then reads .exit;
* `cancel` kills the whole process group on the host (the driver and both side processes);
* `fetch` copies WORK/<run id>/results into a temporary folder next to the destination and renames
  it into place, so a failed copy never leaves a half-written results folder.

SSH runs with BatchMode (a key from the user's agent, ssh config or the host's identity file; never a
password) and keep-alives, so a dead link ends the stream instead of hanging it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError

LOCAL = "local"  # the address of "this machine"
DRIVER = "run_on_npu.py"
ADAPTERS = {"tf1": "npu_bridge", "tf2-compat": "npu_device"}
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
               "-o", "ServerAliveCountMax=3", "-o", "StrictHostKeyChecking=accept-new")
# What a results folder holds per side when the toolchain ran as the bundle asked (glob, what it is).
EXPECTED = (("run.json", "run.json (step times)"), ("outputs.npz", "outputs.npz (the outputs)"),
            ("fusion_result.json", "fusion_result.json (FE's pass counts)"),
            ("ge_dumps/*/ge_*", "GE graph dumps"),
            ("profiling/PROF_*/mindstudio_profiler_output/op_summary_*.csv", "msprof op_summary"))


class RemoteError(FuseLensError):
    """A fault of the host or the link, worded for the user; `kind` lets a front end react to it."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Host:
    """An Ascend host as the user set it up. `address` is `user@host[:port]`, or "local" for this machine."""

    name: str
    address: str
    identity_file: str = ""
    work_dir: str = "~/fuselens-runs"
    setup: str = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
    python: str = "python3"
    mode: str = "tf1"
    ssh_options: list[str] = field(default_factory=list)  # extra `-o KEY=VALUE` words (known-hosts file, ...)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name or ""):
            raise FuseLensError(f"host name {self.name!r}: use letters, digits, '.', '_' or '-'")
        if self.mode not in ADAPTERS:
            raise FuseLensError(f"host {self.name}: mode {self.mode!r} is not one of {', '.join(ADAPTERS)}")
        if self.address != LOCAL:
            _split_address(self.address)

    @property
    def is_local(self) -> bool:
        return self.address == LOCAL

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Host:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _split_address(address: str) -> tuple[str, int | None]:
    """`user@host[:port]` -> ("user@host", port)."""
    match = re.fullmatch(r"((?:[^@\s:]+@)?[^@\s:]+)(?::(\d+))?", address or "")
    if not match:
        raise FuseLensError(f"host address {address!r}: write it as user@host or user@host:port")
    return match.group(1), int(match.group(2)) if match.group(2) else None


@dataclass
class Check:
    """One line of "Test connection": what was checked, whether it holds, and what was seen."""

    what: str
    ok: bool
    detail: str


@dataclass
class Launched:
    """A run started on a host: enough to follow, cancel or fetch it again later."""

    host: str
    run_id: str
    folder: str  # WORK/<run id> on the host


def progress_of(line: str) -> float | None:
    """How far the driver is (0..1) after printing `line`; None for a line that says nothing about it."""
    for pattern, value in ((r"^== original", 0.05), (r"^original: \d+ steps", 0.4), (r"^== fused", 0.45),
                           (r"^fused: \d+ steps", 0.8), (r"^original: exported", 0.85),
                           (r"^fused: exported", 0.9), (r"^done:", 1.0)):
        if re.match(pattern, line):
            return value
    return None


class Transport:
    """The shared run logic; a subclass says how to run a shell script on the host and how to copy folders."""

    def __init__(self, host: Host):
        self.host = host

    # ---- what differs ---------------------------------------------------------------------------------
    def command(self, script: str) -> list[str]:
        raise NotImplementedError

    def put(self, local: Path, remote: str) -> None:
        raise NotImplementedError

    def get(self, remote: str, local: Path) -> None:
        raise NotImplementedError

    # ---- shared -------------------------------------------------------------------------------------------
    def run_script(self, script: str, *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run `script` with bash on the host; a link failure raises RemoteError with its kind."""
        try:
            done = subprocess.run(self.command(script), capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RemoteError("unreachable", f"{self.host.name}: no answer within {timeout:.0f} s") from None
        except FileNotFoundError as e:
            raise RemoteError("unreachable", f"{self.host.name}: cannot start {e.filename}: is it installed?") from None
        self.check_link(done.returncode, done.stderr)
        return done

    def check_link(self, code: int, stderr: str, lost: bool = False) -> None:
        """Raise the worded fault when `ssh` itself failed (exit 255); a remote command's failure is not one.
        `lost`: the link was up before (a run was being followed), so its end is a lost connection."""

    def work_folder(self, run_id: str) -> str:
        return f"{self.host.work_dir.rstrip('/')}/{run_id}"

    def test(self) -> list[Check]:
        """Everything a run needs, in one round trip: the host answers, its set-up line works, Python runs,
        the TF adapter imports, msprof is on PATH after the set-up line, and how many NPUs npu-smi sees."""
        host = self.host
        adapter = ADAPTERS[host.mode]
        py = host.python
        script = "\n".join([
            "echo '@@host'; uname -n",
            f"{host.setup or 'true'} >/tmp/.fuselens_setup_$$ 2>&1; echo \"@@setup $?\"; "
            "tail -n 3 /tmp/.fuselens_setup_$$; rm -f /tmp/.fuselens_setup_$$",
            f"echo '@@python'; {py} -c 'import sys; print(sys.version.split()[0])' 2>&1 || echo '@@fail'",
            f"echo '@@adapter'; {py} -c 'import {adapter}' 2>&1 | tail -n 2; "
            f"{py} -c 'import {adapter}' >/dev/null 2>&1 || echo '@@fail'",
            "echo '@@msprof'; command -v msprof || echo '@@fail'",
            "echo '@@npu'; (npu-smi info 2>&1 || echo '@@fail') | head -n 200",
            "echo '@@end'"])
        done = self.run_script(self._with_setup(script, setup=False))
        return parse_test(done.stdout, host)

    def _with_setup(self, script: str, *, setup: bool = True) -> str:
        """The script as bash runs it on the host (a login-less shell: the set-up line gives the toolchain)."""
        lines = ["set +e"] + ([f"{self.host.setup}"] if setup and self.host.setup else []) + [script]
        return "\n".join(lines)

    def prepare(self) -> None:
        """Make the work folder and check, after the set-up line, that the host's Python runs and finds the TF
        adapter (found, not imported: importing it loads TensorFlow), so a run that cannot start says why before
        anything is sent."""
        host = self.host
        adapter, python = ADAPTERS[host.mode], _q(host.python)
        find = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('{adapter}') else 5)"
        done = self.run_script(self._with_setup(
            f"mkdir -p {_q(host.work_dir)}\ncommand -v {python} >/dev/null 2>&1 || {{ echo @@nopython; exit 0; }}\n"
            f"{python} -c {_q(find)} >/dev/null 2>&1 || echo @@noadapter"))
        setup = setup_name(host)
        if "@@nopython" in done.stdout:
            raise RemoteError("python", f"{host.name}: the remote Python `{host.python}` is not found after {setup}: "
                                        "set Remote Python in the host's settings (`fuselens hosts add ... --python`) "
                                        f"to the Python that has TensorFlow and {adapter}")
        if "@@noadapter" in done.stdout:
            other = ", ".join(f"{mode} ({name})" for mode, name in ADAPTERS.items() if mode != host.mode)
            raise RemoteError("adapter", f"{host.name}: {host.python} cannot find the TF adapter {adapter} (mode "
                                         f"{host.mode}) after {setup}: install Ascend's TensorFlow adapter for that "
                                         f"Python, or set the host's mode to the adapter it has: {other}")

    def launch(self, bundle: Path, run_id: str, *, steps: int | None = None, warmup: int | None = None) -> Launched:
        """Check the host can run it (`prepare`), copy `bundle` to WORK/<run id>/ and start its driver there,
        detached from this connection."""
        folder = self.work_folder(run_id)
        self.prepare()
        self.put(bundle, folder)
        args = [self.host.python, "-u", DRIVER, "--python", self.host.python, "--overwrite"]
        args += ["--steps", str(steps)] if steps is not None else []
        args += ["--warmup", str(warmup)] if warmup is not None else []
        inner = (f"{self.host.setup + ' && ' if self.host.setup else ''}PYTHONUNBUFFERED=1 "
                 f"{' '.join(_q(a) for a in args)}; echo $? > .exit")
        script = (f"cd {_q(folder)} || exit 3\nrm -f .exit .pid run.log\n"
                  f"setsid nohup bash -c {_q(inner)} > run.log 2>&1 < /dev/null &\necho $! > .pid\necho started")
        done = self.run_script(script)
        if "started" not in done.stdout:
            raise RemoteError("run", f"{self.host.name}: could not start the run in {folder}: "
                                     f"{_tail(done.stderr or done.stdout)}")
        return Launched(self.host.name, run_id, folder)

    def follow(self, run: Launched, on_line: Callable[[str], None],
               cancelled: Callable[[], bool] | None = None) -> int:
        """Stream run.log until the run ends; its exit code. A lost link raises RemoteError("lost", ...)
        and leaves the run going; `cancelled()` true stops following (-1; the caller then cancels)."""
        folder = _q(run.folder)
        script = (f"cd {folder} || exit 3\nfor i in $(seq 100); do [ -s .pid ] && break; sleep 0.1; done\n"
                  "pid=$(cat .pid); tail -n +1 -f run.log & t=$!\n"
                  "while [ ! -e .exit ] && kill -0 \"$pid\" 2>/dev/null; do sleep 0.2; done\n"
                  "sleep 0.3; kill $t 2>/dev/null\n"
                  "for i in $(seq 50); do [ -e .exit ] && break; sleep 0.1; done\n"
                  "echo \"@@exit $(cat .exit 2>/dev/null || echo lost)\"")
        process = subprocess.Popen(self.command(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        stop = threading.Event()
        if cancelled is not None:
            def watch() -> None:
                while not stop.wait(0.1):
                    if cancelled():  # the whole group: a local shell's `tail` holds the pipe too
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(process.pid, signal.SIGTERM)
                        return
            threading.Thread(target=watch, daemon=True).start()
        code: int | None = None
        ended = ""  # what .exit says: an exit code, "cancelled", or "lost" when there is none
        assert process.stdout is not None and process.stderr is not None
        try:
            for line in process.stdout:
                line = line.rstrip("\n")
                if line.startswith("@@exit "):
                    ended = line.split(" ", 1)[1]
                    code = int(ended) if ended.lstrip("-").isdigit() else None
                    continue
                on_line(line)
            stderr = process.stderr.read()
            process.wait()
        finally:
            stop.set()
        if cancelled is not None and cancelled():
            return -1
        self.check_link(process.returncode, stderr, lost=True)
        if ended == "cancelled":
            raise RemoteError("cancelled", f"{self.host.name}: the run in {run.folder} was cancelled (its processes "
                                           "were killed); it left no results")
        if code is None:
            raise RemoteError("stopped", f"{self.host.name}: the run in {run.folder} ended without an exit code "
                                         "(killed on the host?)")
        return code

    def status(self, run: Launched) -> str:
        """'running', 'done N' or 'missing'."""
        folder = _q(run.folder)
        done = self.run_script(
            f"cd {folder} 2>/dev/null || {{ echo missing; exit 0; }}\n"
            "if [ -e .exit ]; then echo \"done $(cat .exit)\"; elif [ -s .pid ] && kill -0 -\"$(cat .pid)\" "
            "2>/dev/null; then echo running; else echo stopped; fi")
        return done.stdout.strip() or "missing"

    def cancel(self, run: Launched) -> None:
        """Kill the run's whole process group on the host: the driver and the side it is running."""
        folder = _q(run.folder)
        self.run_script(
            f"cd {folder} 2>/dev/null || exit 0\n[ -s .pid ] || exit 0\npg=$(cat .pid)\n"
            "kill -TERM -- -$pg 2>/dev/null\nfor i in $(seq 30); do kill -0 -- -$pg 2>/dev/null || break; "
            "sleep 0.1; done\nkill -KILL -- -$pg 2>/dev/null\n[ -e .exit ] || echo cancelled > .exit\ntrue")

    def log_tail(self, run: Launched, lines: int = 15) -> str:
        return self.run_script(f"tail -n {lines} {_q(run.folder)}/run.log 2>/dev/null").stdout

    def fetch(self, run: Launched, dest: Path) -> tuple[Path, list[str]]:
        """Copy the run's results/ to `dest` (into a temporary sibling first, renamed when complete); what
        the results lack, as lines naming it per side."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        found = self.run_script(f"test -d {_q(run.folder)}/results && echo yes").stdout.strip()
        if found != "yes":
            raise RemoteError("incomplete", f"{self.host.name}: the run left no results folder in {run.folder} "
                                            f"(nothing came back); its log ends:\n{self.log_tail(run)}")
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            self.get(f"{run.folder}/results", staging / "results")
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(staging / "results", dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return dest, missing_results(dest)


def missing_results(results: Path) -> list[str]:
    """What a results folder lacks, per side ("fused: msprof op_summary"); empty when complete."""
    missing = []
    for side in ("original", "fused"):
        folder = results / side
        if not folder.is_dir():
            missing.append(f"{side}: the whole side (no {side}/ folder)")
            continue
        missing += [f"{side}: {what}" for pattern, what in EXPECTED if not list(folder.glob(pattern))]
    return missing


def parse_test(stdout: str, host: Host) -> list[Check]:
    """The test script's sections as worded checks."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("@@") and line[2:].split(" ")[0] in {"host", "setup", "python", "adapter", "msprof",
                                                                   "npu", "end"}:
            current, _, rest = line[2:].partition(" ")
            sections[current] = [rest] if rest else []
        elif current:
            sections[current].append(line)
    setup = setup_name(host)

    def body(key: str) -> tuple[bool, str]:
        lines = sections.get(key, [])
        failed = "@@fail" in lines
        return not failed, " ".join(line for line in lines if line and line != "@@fail").strip()

    checks = [Check("host answers", "host" in sections, (sections.get("host") or ["?"])[0])]
    code = (sections.get("setup") or ["?"])[0]
    checks.append(Check("set-up line", code == "0", "ok" if code == "0" else
                        f"`{host.setup}` failed (exit {code}): {' '.join(sections.get('setup', [])[1:])}".strip()))
    ok, text = body("python")
    checks.append(Check("remote Python", ok, f"Python {text}" if ok else f"{host.python} does not run: {text}"))
    ok, text = body("adapter")
    adapter = ADAPTERS[host.mode]
    checks.append(Check(f"{adapter} imports", ok, f"import {adapter}: ok" if ok else
                        f"{host.python} cannot import {adapter} after {setup}: {text or 'no module'}"))
    ok, text = body("msprof")
    checks.append(Check("msprof on PATH", ok, text if ok else f"msprof not found on PATH after {setup}"))
    ok, text = body("npu")
    count = len(set(re.findall(r"^\|\s*(\d+)\s+\S+\s*\|\s*[A-Za-z]+\s*\|", "\n".join(sections.get("npu", [])),
                               flags=re.M)))
    checks.append(Check("NPUs (npu-smi info)", ok and count > 0,
                        f"{count} NPU(s)" if ok and count else
                        f"npu-smi info did not run after {setup}: {text[-200:]}" if not ok else
                        "npu-smi info lists no NPU"))
    return checks


def setup_name(host: Host) -> str:
    """The set-up line as a message names it: the script it sources ("set_env.sh"), else "the set-up line"."""
    sourced = re.search(r"(?:^|[;&\s])(?:source|\.)\s+(\S+)", host.setup or "")
    return os.path.basename(sourced.group(1)) if sourced else "the set-up line"


def _q(text: str) -> str:
    """Quote for the host's shell, keeping a leading ~/ expandable."""
    if text.startswith("~/"):
        return "~/" + shlex.quote(text[2:])
    return shlex.quote(text)


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class LocalTransport(Transport):
    """This machine: a workstation with an NPU in it, and the tests."""

    def command(self, script: str) -> list[str]:
        return ["bash", "-c", script]

    def put(self, local: Path, remote: str) -> None:
        target = Path(os.path.expanduser(remote))
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(local, target)

    def get(self, remote: str, local: Path) -> None:
        source = Path(os.path.expanduser(remote))
        if not source.is_dir():
            raise RemoteError("incomplete", f"{self.host.name}: no results folder at {remote}")
        shutil.copytree(source, local)


class SshTransport(Transport):
    """An Ascend host over the system's `ssh` (BatchMode: agent, ssh config or identity file, no password)."""

    def __init__(self, host: Host):
        super().__init__(host)
        self.target, self.port = _split_address(host.address)

    def _options(self, port_flag: str) -> list[str]:
        words = list(SSH_OPTIONS)
        if self.port:
            words += [port_flag, str(self.port)]
        if self.host.identity_file:
            words += ["-i", os.path.expanduser(self.host.identity_file), "-o", "IdentitiesOnly=yes"]
        for option in self.host.ssh_options:
            words += ["-o", option]
        return words

    def command(self, script: str) -> list[str]:
        return ["ssh", *self._options("-p"), self.target, "bash -c " + shlex.quote(script)]

    def check_link(self, code: int, stderr: str, lost: bool = False) -> None:
        if code != 255:
            return
        text = _tail(stderr, 4)
        if "Permission denied" in text or "Too many authentication failures" in text:
            key = self.host.identity_file or "the default identity"
            raise RemoteError("auth", f"{self.host.name}: authentication refused by {self.target} (the key from "
                                      f"the agent, ~/.ssh/config or {key} was not accepted; FuseLens never asks "
                                      f"for a password): {text}")
        if lost:
            raise RemoteError("lost", f"{self.host.name}: connection lost ({text or 'ssh exit 255'}); the run keeps "
                                      "going on the host: re-attach or fetch its results later")
        raise RemoteError("unreachable", f"{self.host.name}: host unreachable: {text or 'ssh exit 255'}")

    def _copy(self, source: str, target: str) -> None:
        ssh = " ".join(shlex.quote(w) for w in ["ssh", *self._options("-p")])
        if shutil.which("rsync"):
            words = ["rsync", "-a", "--delete", "-e", ssh, source.rstrip("/") + "/", target.rstrip("/") + "/"]
        else:
            words = ["scp", "-r", "-q", *self._options("-P"), source, target]
        try:
            done = subprocess.run(words, capture_output=True, text=True, timeout=3600, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RemoteError("lost", f"{self.host.name}: copying {source} took over an hour; stopped") from None
        if done.returncode:
            self.check_link(255 if "ssh" in done.stderr or "connection" in done.stderr.lower() else 0, done.stderr)
            raise RemoteError("copy", f"{self.host.name}: copying {source} to {target} failed: {_tail(done.stderr, 4)}")

    def put(self, local: Path, remote: str) -> None:
        self._copy(str(local), f"{self.target}:{remote}")

    def get(self, remote: str, local: Path) -> None:
        local.mkdir(parents=True, exist_ok=True)
        self._copy(f"{self.target}:{remote}", str(local))


def transport_for(host: Host) -> Transport:
    return LocalTransport(host) if host.is_local else SshTransport(host)
