"""An NPU run on an Ascend host in one call: write the bundle, send it, run it, bring the results back.

The hosts the user set up and the runs they made live as JSON under the user's config and data
folders (`FUSELENS_CONFIG_DIR` / `FUSELENS_DATA_DIR` override them, as the tests do), so both front
ends see the same hosts and the same history. A run is recorded before it starts, so one whose
connection was lost can be re-attached (`attach`) and its results fetched later. The import itself is
the command the bundle prints (`import_command`), so a reopened run rebuilds the prediction it was
made with.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from fuselens.core.ascend.remote import Host, Launched, RemoteError, transport_for
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_json_atomic


def config_dir() -> Path:
    if os.environ.get("FUSELENS_CONFIG_DIR"):
        return Path(os.environ["FUSELENS_CONFIG_DIR"])
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "fuselens"


def data_dir() -> Path:
    if os.environ.get("FUSELENS_DATA_DIR"):
        return Path(os.environ["FUSELENS_DATA_DIR"])
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "fuselens"


def _read_list(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise FuseLensError(f"{path}: not readable ({e}); fix or remove it") from None
    return data if isinstance(data, list) else []


class HostStore:
    """The Ascend hosts, in hosts.json under the config folder. No password is ever stored: SSH runs in
    BatchMode with the user's agent, ssh config or the host's identity file."""

    def __init__(self, path: Path | None = None):
        self.path = path or config_dir() / "hosts.json"

    def all(self) -> list[Host]:
        return [Host.from_json(d) for d in _read_list(self.path)]

    def get(self, name: str) -> Host:
        for host in self.all():
            if host.name == name:
                return host
        known = ", ".join(h.name for h in self.all()) or "none yet; add one with `fuselens hosts add`"
        raise FuseLensError(f"no Ascend host named {name!r} (hosts: {known})")

    def put(self, host: Host) -> None:
        hosts = [h for h in self.all() if h.name != host.name] + [host]
        write_json_atomic(self.path, [h.to_json() for h in hosts])

    def remove(self, name: str) -> None:
        self.get(name)
        write_json_atomic(self.path, [h.to_json() for h in self.all() if h.name != name])


@dataclass
class RunRecord:
    """One NPU run in the history: what ran where, when, and where its results are."""

    id: str
    model: str
    host: str
    started: str
    configuration: list[str]  # the pass-selection words of `import-profile` that rebuild the prediction
    folder: str  # the local folder: bundle/ and, once fetched, results/
    remote_folder: str = ""
    status: str = "running"  # running, done, failed, cancelled, detached, incomplete
    missing: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def results(self) -> Path:
        return Path(self.folder) / "results"

    @property
    def can_reattach(self) -> bool:
        """Its host may still be running it: nobody followed it to its end."""
        return self.status in ("running", "detached") and bool(self.remote_folder)

    @property
    def can_fetch(self) -> bool:
        """Results may be waiting on the host: not fetched yet, or only in part."""
        return self.status in ("running", "detached", "incomplete") and bool(self.remote_folder)

    @property
    def launched(self) -> Launched:
        return Launched(self.host, self.id, self.remote_folder)


class RunHistory:
    """runs.json under the data folder, newest last."""

    def __init__(self, path: Path | None = None):
        self.path = path or data_dir() / "runs.json"

    def all(self) -> list[RunRecord]:
        return [RunRecord(**{k: v for k, v in d.items() if k in RunRecord.__dataclass_fields__})
                for d in _read_list(self.path)]

    def get(self, run_id: str) -> RunRecord:
        found = [r for r in self.all() if r.id == run_id or r.id.startswith(run_id)]
        if len(found) != 1:
            raise FuseLensError(f"no single run {run_id!r} in the history ({self.path}); `fuselens runs` lists them")
        return found[0]

    def save(self, record: RunRecord) -> RunRecord:
        records = [r for r in self.all() if r.id != record.id] + [record]
        write_json_atomic(self.path, [asdict(r) for r in records])
        return record


def new_record(model: str, host: Host, configuration: Sequence[str]) -> RunRecord:
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(model).stem or "model")
    run_id = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    folder = data_dir() / "runs" / run_id
    return RunRecord(run_id, model, host.name, time.strftime("%Y-%m-%d %H:%M:%S"), list(configuration),
                     str(folder))


def configuration_words(bundle: Path) -> list[str]:
    """The pass selection from the bundle's own import command (`fuselens import-profile {results} --model M ...`)."""
    command = json.loads((bundle / "bundle.json").read_text())["import_command"]
    return shlex.split(command)[5:]


def announce(record: RunRecord, host: Host) -> str:
    """The first line a run on a host prints; the window reads the run's id back from it (`announced_run`)."""
    return f"run {record.id}: {record.model} on {host.name} ({host.address}, {host.mode})"


def announced_run(line: str) -> str | None:
    match = re.match(r"run (\S+): ", line)
    return match.group(1) if match else None


def configuration_note(record: RunRecord, model: str, configuration: Sequence[str]) -> str:
    """What a reopened run's prediction is when the open model or pass selection is not the one it ran with."""
    if (record.model, list(record.configuration)) == (model, list(configuration)):
        return ""
    made = " ".join(record.configuration) or "the default passes"
    shown = " ".join(configuration) or "the default passes"
    return (f"this run was made for {record.model} with {made}; the prediction shown is {model}'s with {shown} "
            "(open that model and selection for the run's own)")


def run_bundle_on_host(record: RunRecord, host: Host, *, on_line: Callable[[str], None],
                       cancelled: Callable[[], bool] | None = None, steps: int | None = None,
                       warmup: int | None = None, history: RunHistory | None = None) -> RunRecord:
    """Send record.folder/bundle to `host`, run it, follow its output, fetch results/ into record.folder.
    Every fault is a RemoteError worded for the user; the record in the history says where the run stands."""
    history = history or RunHistory()
    transport = transport_for(host)
    bundle = Path(record.folder) / "bundle"
    on_line(f"sending the bundle to {host.name} ({host.address}) ...")
    try:
        launched = transport.launch(bundle, record.id, steps=steps, warmup=warmup)
    except RemoteError as e:
        history.save(replace(record, status="failed", message=str(e)))
        raise
    record = history.save(replace(record, remote_folder=launched.folder, status="running"))
    on_line(f"running in {launched.folder} on {host.name}")
    return follow_and_fetch(record, host, on_line=on_line, cancelled=cancelled, history=history)


def follow_and_fetch(record: RunRecord, host: Host, *, on_line: Callable[[str], None],
                     cancelled: Callable[[], bool] | None = None, history: RunHistory | None = None) -> RunRecord:
    """Follow a launched run to its end (again, after a lost connection), then bring its results back."""
    history = history or RunHistory()
    transport = transport_for(host)
    try:
        code = transport.follow(record.launched, on_line, cancelled)
    except RemoteError as e:
        if e.kind == "lost":
            history.save(replace(record, status="detached", message=str(e)))
            raise RemoteError("lost", f"{e} (`fuselens runs attach {record.id}`)") from None
        raise
    if code == -1:
        transport.cancel(record.launched)
        history.save(replace(record, status="cancelled", message="cancelled; the host's run was killed"))
        raise RemoteError("cancelled", f"run {record.id} cancelled; its processes on {host.name} were killed")
    if code != 0:
        tail = transport.log_tail(record.launched)
        history.save(replace(record, status="failed", message=f"exit {code}"))
        raise RemoteError("run", f"the run on {host.name} failed (exit code {code}); its output ends:\n{tail.rstrip()}")
    on_line(f"fetching the results from {host.name} ...")
    _, missing = transport.fetch(record.launched, record.results)
    record = replace(record, status="incomplete" if missing else "done", missing=missing,
                     message=("results incomplete: " + "; ".join(missing)) if missing else "")
    return history.save(record)


def fetch_finished(record: RunRecord, host: Host, *, on_line: Callable[[str], None],
                   history: RunHistory | None = None) -> RunRecord:
    """Bring back the results of a run that ended on the host while nobody followed it; one still running is
    refused (re-attaching follows it)."""
    if _state_on_host(record, host) == "running":
        raise RemoteError("running", f"run {record.id} is still running on {host.name}: re-attach to follow it "
                                     "to its end")
    return follow_and_fetch(record, host, on_line=on_line, history=history)


def follow_again(record: RunRecord, host: Host, *, on_line: Callable[[str], None],
                 cancelled: Callable[[], bool] | None = None, history: RunHistory | None = None) -> RunRecord:
    """Re-attach: follow a run whose connection was lost to its end, then bring its results back."""
    _state_on_host(record, host)
    return follow_and_fetch(record, host, on_line=on_line, cancelled=cancelled, history=history)


def _state_on_host(record: RunRecord, host: Host) -> str:
    """'running', 'done N' or 'stopped'; a run whose folder is gone from the host is a RemoteError."""
    state = transport_for(host).status(record.launched) if record.remote_folder else "missing"
    if state == "missing":
        raise RemoteError("missing", f"run {record.id}: its folder {record.remote_folder or '(never sent)'} is not "
                                     f"on {host.name} (removed, or the host's work dir changed)")
    return state


def describe_checks(checks: Sequence[Any]) -> str:
    """"Test connection" as lines: a mark, what was checked, what was seen."""
    return "\n".join(f"  {'ok  ' if c.ok else 'FAIL'} {c.what:22s} {c.detail}" for c in checks)


def host_from_fields(fields: Mapping[str, Any]) -> Host:
    """A host from a form or the command line's options; unknown keys are ignored, empty ones keep defaults."""
    given = {k: v for k, v in fields.items() if k in Host.__dataclass_fields__ and v not in (None, "")}
    return Host(**given)
