"""The TF adapter's and GE's logs (`plog-*.log`, `host-*.log`): what the toolchain says it ran.

A user without dumps often still has the logs, and four kinds of line in them name fusion work:

* a scope pass registered with the TF parser, general (always on) or not:
  `Register scope fusion pass, pass name = X, is_enable = 1.` (2020; later `true` / `false`) and
  `Register pass name = X, is_enable = false.` (2023, GE's scope_pass_registry);
* a scope pass that ran on a graph: `[scope_fusion] Scope pass X's patterns is matched.` or
  `... is not matched and ignored.` (GE's ScopeBasePass::Run, so a plog shows `Run:[scope_fusion] ...`);
* an FE graph fusion pass that ran, with its time: `[FE_PERFORMANCE]The time cost of
  GraphFusion::RunOpsFusionPass pass_name: X is [N] micro second.` (FE's FE_TIMECOST_END);
* an AutoFuse refusal: `node1 A(Abs) and node2 B(Exp) cannot fuse, the reason is [NF1002][...]`
  (AutoFuse's CanFuse checks, reason codes from not_fuse_reason_code.h).

Every such line may carry the plog prefix (`[INFO] GE(pid,process):time [file:line]tid Func: ...`) or none,
and sits among thousands of unrelated lines; each is read wherever it stands in its line. One read takes
many files (a folder of plogs) and keeps, for every record, the file and line it came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError

HEAD_BYTES = 64 * 1024
# The plog / slog line prefix: `[INFO] GE(1234,python3.7):2020-11-05-09:52:33.573.914 [file.cc:46]1234 Func: `
PLOG_PREFIX = re.compile(r"^\[(?:DEBUG|INFO|WARNING|WARN|ERROR|EVENT|TRACE)\] [A-Za-z_]+\(\d+,[^)]*\):")
REGISTERED = re.compile(r"Register (?:scope fusion pass, )?pass name = (?P<name>[^\s,]+), is_enable = "
                        r"(?P<enable>[A-Za-z0-9]+)")
SCOPE_RUN = re.compile(r"\[scope_fusion\] Scope pass (?P<name>\S+?)'s patterns is (?P<not>not )?matched")
FE_PASS_RUN = re.compile(r"RunOpsFusionPass pass_name: (?P<name>\S+) is \[(?P<us>-?\d+)\] micro second")
REFUSAL = re.compile(r"(?:node1 (?P<node1>\S+?)\((?P<type1>[^()]*)\) and node2 (?P<node2>\S+?)\((?P<type2>[^()]*)\) )?"
                     r"cannot fuse, the reason is \[(?P<code>NF\d+)\]\[(?P<reason>[^\]]*)\]?")
ENABLED_WORDS = {"1": True, "true": True, "0": False, "false": False}
# AutoFuse's refusal codes (not_fuse_reason_code.h) the toolchain's docs explain; a log line carries its own text.
REFUSAL_CODES = {
    "NF1001": "the two nodes share no data", "NF1002": "fusing them would create a cycle",
    "NF1003": "fusing them increases peak memory", "NF1007": "too many inputs after fusion",
    "NF1010": "more nodes than max_fusion_size", "NF1021": "a reduce cannot fuse horizontally",
    "NF1032": "an elementwise op with more than one input", "NF9999": "unknown reason",
}


@dataclass(frozen=True)
class ScopeRegistration:
    """A scope pass registered with the TF parser; `enabled` is its general flag (on without being asked)."""

    name: str
    enabled: bool
    where: str  # file:line


@dataclass(frozen=True)
class ScopeRun:
    """One run of a scope pass on one graph: its patterns matched some scope, or none."""

    name: str
    matched: bool
    where: str


@dataclass(frozen=True)
class GraphFusionRun:
    """One run of an FE graph fusion pass on one graph, with the time FE measured."""

    name: str
    time_us: int
    where: str


@dataclass(frozen=True)
class AutoFuseRefusal:
    """AutoFuse refusing to fuse two nodes, with its reason code."""

    code: str
    reason: str
    nodes: tuple[str, ...]  # the two nodes (as the toolchain names them), when the line names them
    types: tuple[str, ...]
    where: str


@dataclass
class ScopePassSummary:
    """Everything the logs say of one scope pass."""

    name: str
    registered: bool | None = None  # registered general (True), registered not general (False), or not seen
    matched: int = 0
    not_matched: int = 0

    @property
    def ran(self) -> bool:
        return bool(self.matched or self.not_matched)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "registered_enabled": self.registered, "matched": self.matched,
                "not_matched": self.not_matched}


@dataclass
class ToolchainLog:
    """The fusion records of one or more log files."""

    sources: list[str] = field(default_factory=list)
    registrations: list[ScopeRegistration] = field(default_factory=list)
    scope_runs: list[ScopeRun] = field(default_factory=list)
    graph_fusion: list[GraphFusionRun] = field(default_factory=list)
    refusals: list[AutoFuseRefusal] = field(default_factory=list)
    lines: int = 0

    @property
    def empty(self) -> bool:
        return not (self.registrations or self.scope_runs or self.graph_fusion or self.refusals)

    def scope_passes(self) -> dict[str, ScopePassSummary]:
        """Every scope pass the logs name, in the order they first name it."""
        found: dict[str, ScopePassSummary] = {}
        for reg in self.registrations:
            entry = found.setdefault(reg.name, ScopePassSummary(reg.name))
            entry.registered = reg.enabled
        for run in self.scope_runs:
            entry = found.setdefault(run.name, ScopePassSummary(run.name))
            if run.matched:
                entry.matched += 1
            else:
                entry.not_matched += 1
        return found

    def scope_pass(self, name: str) -> ScopePassSummary | None:
        return self.scope_passes().get(name)

    def fe_passes(self) -> dict[str, tuple[int, int]]:
        """FE graph fusion passes that ran: name -> (runs, total microseconds), in first-run order."""
        found: dict[str, tuple[int, int]] = {}
        for run in self.graph_fusion:
            runs, total = found.get(run.name, (0, 0))
            found[run.name] = (runs + 1, total + run.time_us)
        return found

    def extend(self, other: ToolchainLog) -> None:
        self.sources += other.sources
        self.registrations += other.registrations
        self.scope_runs += other.scope_runs
        self.graph_fusion += other.graph_fusion
        self.refusals += other.refusals
        self.lines += other.lines

    def to_json(self) -> dict[str, Any]:
        return {"sources": self.sources, "lines": self.lines,
                "scope_passes": [s.to_json() for s in self.scope_passes().values()],
                "fe_graph_fusion": [{"name": n, "runs": r, "total_us": t} for n, (r, t) in self.fe_passes().items()],
                "autofuse_refusals": [{"code": r.code, "reason": r.reason, "nodes": list(r.nodes),
                                       "types": list(r.types), "where": r.where} for r in self.refusals]}


# ---- recognising a log by its content -------------------------------------------------------------
def recognises(head: bytes) -> bool:
    """The first bytes (up to 64 KiB) are a toolchain log: plog-prefixed lines, or any fusion record above."""
    text = head[:HEAD_BYTES].decode("utf-8", "replace")
    lines = text.splitlines()[:2000]
    if any(PLOG_PREFIX.match(line) for line in lines):
        return True
    return any(pattern.search(line) for line in lines for pattern in (REGISTERED, SCOPE_RUN, FE_PASS_RUN, REFUSAL))


# ---- reading ----------------------------------------------------------------------------------------
def parse_log_lines(lines: Iterable[str], source: str = "<log>") -> ToolchainLog:
    """The fusion records of a log's lines (prefixed or not; unrelated lines skipped)."""
    log = ToolchainLog(sources=[source])
    for number, raw in enumerate(lines, 1):
        log.lines += 1
        line = raw.rstrip("\r\n")
        if "pass name = " in line and (m := REGISTERED.search(line)):
            enabled = ENABLED_WORDS.get(m["enable"].lower())
            if enabled is not None:
                log.registrations.append(ScopeRegistration(m["name"], enabled, f"{source}:{number}"))
        elif "[scope_fusion]" in line and (m := SCOPE_RUN.search(line)):
            log.scope_runs.append(ScopeRun(m["name"], not m["not"], f"{source}:{number}"))
        elif "RunOpsFusionPass" in line and (m := FE_PASS_RUN.search(line)):
            log.graph_fusion.append(GraphFusionRun(m["name"], int(m["us"]), f"{source}:{number}"))
        elif "cannot fuse" in line and (m := REFUSAL.search(line)):
            nodes = tuple(n for n in (m["node1"], m["node2"]) if n)
            types = tuple(t for t in (m["type1"], m["type2"]) if t is not None)
            log.refusals.append(AutoFuseRefusal(m["code"], m["reason"].strip(), nodes, types, f"{source}:{number}"))
    return log


def parse_log_text(text: str, source: str = "<log>") -> ToolchainLog:
    return parse_log_lines(text.splitlines(), source)


def _lines(path: Path) -> Iterator[str]:
    """A log's lines, whatever their encoding (a log may hold GBK text or a cut-off UTF-8 sequence)."""
    with path.open("rb") as f:
        for raw in f:
            yield raw.decode("utf-8", "replace")


def _head(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(HEAD_BYTES)


def log_files(folder: Path) -> list[Path]:
    """The toolchain logs anywhere under a folder, by content, in path order."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            if recognises(_head(path)):
                found.append(path)
        except OSError:
            continue  # an unreadable file among the logs is not one of them
    return found


def read_log_file(path: str | os.PathLike[str]) -> ToolchainLog:
    """One log file; FuseLensError naming it when it cannot be read or does not look like a log."""
    path = Path(path)
    try:
        head = _head(path)
        if not recognises(head):
            raise FuseLensError(f"{path}: {_looks_like(head)}: not a toolchain log (expected plog lines such as "
                                "'[INFO] GE(pid,process):time [file:line]tid Func: ...' or scope / graph fusion "
                                "records)")
        return parse_log_lines(_lines(path), str(path))
    except IsADirectoryError:
        raise FuseLensError(f"{path}: is a directory (give it as a folder of logs)") from None
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None


def read_toolchain_logs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> ToolchainLog:
    """Log files and folders of logs, read as one: a folder gives every log under it (by content)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    log = ToolchainLog()
    for item in items:
        path = Path(item)
        if path.is_dir():
            files = log_files(path)
            if not files:
                raise FuseLensError(f"{path}: holds no toolchain log (plog-*.log, host-*.log)")
            for file in files:
                log.extend(read_log_file(file))
        else:
            log.extend(read_log_file(path))
    return log


def _looks_like(head: bytes) -> str:
    """What a refused file looked like, in a few words."""
    if not head:
        return "an empty file"
    if b"\0" in head[:4096]:
        return "binary data"
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text[:1] in "{[":
        return "JSON"
    first = text.splitlines()[0] if text else ""
    return f"text starting {first[:40]!r}"
