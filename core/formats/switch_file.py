"""The fusion switch file (GE graph / UB fusion passes on and off) and the three NPU switch forms.

JSON form: `{"Switch": {"GraphFusion": {"ALL": "off", "X": "on"}, "UBFusion": {...}}}`; the older
line form: one `PassName:on|off` per line. ATC takes it as `--fusion_switch_file`, a TF session
as `custom_op.parameter_map["fusion_switch_file"]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fuselens.core.errors import FuseLensError
from fuselens.core.wording import shown

SECTIONS = ("GraphFusion", "UBFusion")
STATES = ("on", "off")
_JSON_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"Switch"\s*:')
_LINE = re.compile(rb"^\s*[^\s:#][^:]*:\s*(?:on|off)\s*$", re.I)


def recognises(head: bytes) -> bool:
    """Whether a file whose first 64 KiB are `head` is a fusion switch file: a JSON object opening with
    `"Switch"`, or lines that are all `PassName:on|off` (blank lines and # comments aside)."""
    if _JSON_OPENING.match(head):
        return True
    lines = [line for line in head.removeprefix(b"\xef\xbb\xbf").splitlines()
             if line.strip() and not line.strip().startswith(b"#")]
    if len(head) >= 65536 and lines:
        lines.pop()  # the head may end inside a line
    return bool(lines) and all(_LINE.match(line) for line in lines)


@dataclass
class FusionSwitches:
    """Per section, pass name -> "on"/"off" (`ALL` switches every pass that may be switched)."""

    graph_fusion: dict[str, str] = field(default_factory=dict)
    ub_fusion: dict[str, str] = field(default_factory=dict)

    def sections(self) -> dict[str, dict[str, str]]:
        return {"GraphFusion": self.graph_fusion, "UBFusion": self.ub_fusion}

    def to_json_text(self) -> str:
        return json.dumps({"Switch": {k: v for k, v in self.sections().items() if v}}, indent=2) + "\n"

    def to_lines(self) -> str:
        """The line form; it has no `ALL` entry, so `ALL` is left out."""
        lines = [f"{name}:{state}" for section in self.sections().values()
                 for name, state in section.items() if name != "ALL"]
        return "\n".join(lines) + "\n"


def parse_switch_file(text: str, source: str = "<switch file>") -> FusionSwitches:
    """Either form; a bad entry is a FuseLensError naming the file and the line or key."""
    if text.lstrip().startswith("{"):
        return _parse_json(text, source)
    switches = FusionSwitches()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, state = line.partition(":")
        if not sep or not name.strip() or state.strip().lower() not in STATES:
            raise FuseLensError(f"{source}, line {number}: expected PassName:on or PassName:off, got {line!r}")
        switches.graph_fusion[name.strip()] = state.strip().lower()
    return switches


def _parse_json(text: str, source: str) -> FusionSwitches:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise FuseLensError(f"{source}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("Switch"), dict):
        raise FuseLensError(f"{source}: expected {{\"Switch\": {{\"GraphFusion\": {{...}}, \"UBFusion\": {{...}}}}}}")
    switches = FusionSwitches()
    for section, entries in data["Switch"].items():
        if section not in SECTIONS:
            raise FuseLensError(f"{source}: unknown section Switch.{shown(section)} (known: {', '.join(SECTIONS)})")
        if not isinstance(entries, dict):
            raise FuseLensError(f"{source}: Switch.{section} must be an object of PassName: \"on\"|\"off\"")
        for name, state in entries.items():
            if not isinstance(state, str) or state.lower() not in STATES:
                raise FuseLensError(f"{source}: Switch.{section}.{shown(name)} is {state!r}, "
                                    "expected \"on\" or \"off\"")
            switches.sections()[section][name] = state.lower()
    return switches


@dataclass
class SwitchForms:
    """The chosen passes as the Ascend toolchain takes them: the three switch forms, plus the nodes
    AutoFuse must leave alone (per-match skips)."""

    scope_passes: list[str]  # enable_scope_fusion_passes (registered names of non-general scope passes)
    autofuse_flags: str  # AUTOFUSE_FLAGS
    fusion_switches: FusionSwitches  # GE/FE pass names only
    autofuse_skip_nodes: tuple[str, ...] = ()  # AUTOFUSE_DFX_FLAGS --skip_node_names_cfg, [ByNodeName]


def skip_node_names_cfg(node_names: Sequence[str]) -> str:
    """The .ini AUTOFUSE_DFX_FLAGS's `--skip_node_names_cfg` reads: one node name per line under
    [ByNodeName] (its other section, [ByNodeType], skips whole op types)."""
    return "# nodes AutoFuse keeps out of fusion (FuseLens per-match skips)\n[ByNodeName]\n" + "".join(
        f"{name}\n" for name in node_names)


class PassChoice(Protocol):
    """What core needs of a pass configuration (`passes.config.PassConfig`): the passes that ran
    and the NPU switch forms. A protocol, so the runner and the NPU bundle take the configuration
    itself while core still never imports passes."""

    def pass_ids(self) -> list[str]: ...

    def to_switch_forms(self) -> SwitchForms: ...
