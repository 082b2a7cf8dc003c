"""`hosts` (the Ascend hosts FuseLens runs on), `runs` (the NPU run history) and `run --backend npu --host`.

A remote run writes the bundle (session/npu_export.py), runs it on the host (session/remote_run.py),
and imports what came back with the very command the bundle prints, so the report is the one
`import-profile` gives: the same tables as a CPU run, plus predicted vs actual.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from fuselens.cli.common import fuse_model, import_profile, input_shapes, pass_selection, print_json
from fuselens.core.ascend.remote import ADAPTERS, RemoteError, transport_for
from fuselens.core.errors import FuseLensError
from fuselens.session.remote_run import (
    HostStore,
    RunHistory,
    RunRecord,
    announce,
    describe_checks,
    fetch_finished,
    follow_again,
    host_from_fields,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hosts", help="the Ascend hosts `run --backend npu --host NAME` runs on: add, list, test, "
                                     "remove")
    hosts = p.add_subparsers(dest="hosts_command", metavar="ACTION", required=True)
    a = hosts.add_parser("add", help="add or replace a host")
    a.add_argument("name")
    a.add_argument("address", help="user@host[:port] (SSH, key from the agent/config or --identity), or `local` "
                                   "for this machine")
    a.add_argument("--identity", dest="identity_file", help="the SSH private key (no password is ever stored)")
    a.add_argument("--work-dir", help="where runs go on the host (default ~/fuselens-runs)")
    a.add_argument("--setup", help="the line that sets up the toolchain "
                                   "(default: source /usr/local/Ascend/ascend-toolkit/set_env.sh)")
    a.add_argument("--python", help="the host's Python with TensorFlow and the adapter (default python3)")
    a.add_argument("--mode", choices=list(ADAPTERS),
                   help="tf1: TF 1.15 + npu_bridge; tf2-compat: TF 2.6.5 + npu_device")
    a.add_argument("--ssh-option", dest="ssh_options", action="append", metavar="KEY=VALUE",
                   help="an extra `ssh -o` option (repeatable)")
    a.set_defaults(func=run_hosts_add)
    for name, func, text in (("list", run_hosts_list, "list the hosts"),
                             ("test", run_hosts_test, "check the host in one round trip: it answers, Python and the "
                                                      "adapter import, msprof is on PATH, NPUs npu-smi sees"),
                             ("remove", run_hosts_remove, "forget a host")):
        q = hosts.add_parser(name, help=text)
        if name != "list":
            q.add_argument("name")
        q.add_argument("--json", action="store_true", help="print JSON")
        q.set_defaults(func=func)

    p = sub.add_parser("runs", help="the NPU runs made on Ascend hosts: list, show one again, re-attach one, "
                                    "fetch a finished one's results")
    p.add_argument("action", nargs="?", choices=["list", "show", "attach", "fetch"], default="list",
                   help="show: import a run's results again; attach: follow a run whose connection was lost, "
                        "then fetch and import its results; fetch: bring back and import the results of one that "
                        "ended on the host meanwhile")
    p.add_argument("run", nargs="?", help="the run id (a unique prefix is enough)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_runs)


# ---- hosts -------------------------------------------------------------------------------------------------
def run_hosts_add(args: argparse.Namespace) -> int:
    host = host_from_fields(vars(args))
    HostStore().put(host)
    print(f"host {host.name}: {host.address}, {host.mode}, Python {host.python}, work dir {host.work_dir}"
          f"{', identity ' + host.identity_file if host.identity_file else ''}; set-up: {host.setup or '(none)'}")
    return 0


def run_hosts_list(args: argparse.Namespace) -> int:
    hosts = HostStore().all()
    if args.json:
        print_json([h.to_json() for h in hosts])
        return 0
    if not hosts:
        print("no Ascend hosts yet: fuselens hosts add NAME user@host[:port] [--identity KEY] [--setup LINE]")
    for h in hosts:
        print(f"{h.name:16s} {h.address:28s} {h.mode:10s} {h.python}  {h.work_dir}")
    return 0


def run_hosts_test(args: argparse.Namespace) -> int:
    host = HostStore().get(args.name)
    checks = transport_for(host).test()
    if args.json:
        print_json([vars(c) for c in checks])
    else:
        print(f"{host.name} ({host.address}):")
        print(describe_checks(checks))
    return 0 if all(c.ok for c in checks) else 1


def run_hosts_remove(args: argparse.Namespace) -> int:
    HostStore().remove(args.name)
    print(f"removed host {args.name}")
    return 0


# ---- a run on a host ----------------------------------------------------------------------------------------
def run_on_host(args: argparse.Namespace) -> int:
    """`run MODEL --backend npu --host NAME`: bundle, send, run, fetch, import; progress lines on stderr."""
    from fuselens.session.npu_export import export_npu_bundle
    from fuselens.session.remote_run import configuration_words, new_record, run_bundle_on_host

    if args.backend != "npu":
        raise FuseLensError(f"--host runs the model on an Ascend host; give --backend npu (not {args.backend})")
    host = HostStore().get(args.host)
    history = RunHistory()
    _, pipeline = fuse_model(args)
    record = new_record(args.model, host, [])
    bundle = Path(record.folder) / "bundle"
    export_npu_bundle(bundle, pipeline, model=args.model, mode=host.mode, input_shapes=input_shapes(args),
                      steps=args.steps, warmup=args.warmup)
    record = history.save(RunRecord(**{**vars(record), "configuration": configuration_words(bundle)}))
    print(announce(record, host), file=sys.stderr)
    record = _follow(lambda cancelled: run_bundle_on_host(record, host, on_line=_show, cancelled=cancelled,
                                                          history=history))
    return import_run(record, args)


def _show(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _follow(work: Any) -> RunRecord:
    """Run `work(cancelled)`; SIGTERM or Ctrl-C sets `cancelled`, so the host's processes are killed, not left."""
    cancelled = threading.Event()

    def stop(*_: Any) -> None:
        cancelled.set()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return work(cancelled.is_set)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def import_run(record: RunRecord, args: argparse.Namespace) -> int:
    """Import the run's results as its bundle's import command does (the pass selection it ran with); what is
    missing is named, what arrived shown."""
    for line in record.missing:
        print(f"fuselens: results incomplete: {line}", file=sys.stderr)
    config = pass_selection(shlex.join(record.configuration), f"run {record.id}'s pass selection")
    imported = argparse.Namespace(path=str(record.results), model=record.model, save=getattr(args, "save", None),
                                  json=getattr(args, "json", False))
    import_profile(imported, config)
    if record.missing:
        print(f"fuselens: results incomplete ({len(record.missing)} missing, listed above); shown: what arrived",
              file=sys.stderr)
        return 3
    return 0


# ---- runs --------------------------------------------------------------------------------------------------
def run_runs(args: argparse.Namespace) -> int:
    history = RunHistory()
    if args.action == "list":
        records = history.all()
        if args.json:
            print_json([vars(r) for r in records])
            return 0
        if not records:
            print("no NPU runs yet: fuselens run MODEL --backend npu --host NAME")
        for r in records:
            where = str(r.results) if r.results.is_dir() else "(no results here)"
            config = " ".join(r.configuration) or "default passes"
            print(f"{r.id:36s} {r.started}  {r.model:14s} on {r.host:12s} {r.status:10s} {config}  {where}")
        return 0
    if not args.run:
        raise FuseLensError(f"runs {args.action}: give the run id (`fuselens runs` lists them)")
    record = history.get(args.run)
    if args.action == "attach" and record.status in ("done", "incomplete") and record.results.is_dir():
        print(f"run {record.id} already came back; showing it", file=sys.stderr)
    elif args.action == "attach":
        host = HostStore().get(record.host)
        print(f"re-attaching run {record.id} on {host.name} ({record.remote_folder})", file=sys.stderr)
        record = _follow(lambda cancelled: follow_again(record, host, on_line=_show, cancelled=cancelled,
                                                        history=history))
    elif args.action == "fetch":
        host = HostStore().get(record.host)
        print(f"fetching the results of run {record.id} from {host.name} ({record.remote_folder})", file=sys.stderr)
        record = fetch_finished(record, host, on_line=_show, history=history)
    elif not record.results.is_dir():
        raise FuseLensError(f"run {record.id} ({record.status}) has no results here yet: "
                            f"`fuselens runs attach {record.id}` fetches them")
    return import_run(record, args)


__all__ = ["RemoteError", "register", "run_on_host"]
