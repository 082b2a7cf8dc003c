"""PassConfig: which passes run and how, in one immutable value every front end shares.

The pass panel shows and edits one, the command line builds one from its flags, the pipeline,
the runner and the NPU bundle take one. It reads and writes every switch form of the Ascend
toolchain, so a configuration travels both ways between FuseLens and the toolchain:

* `enable_scope_fusion_passes`: the comma list of non-general scope passes (`with_scope_list`);
* `AUTOFUSE_FLAGS`: `--enable_autofuse=true;--autofuse_enable_pass=reduce` (`with_autofuse_flags`);
* the fusion switch file: JSON with an optional `ALL`, or `Pass:on|off` lines (`with_switch_file`).

User scope rule files and GE Python pass files (`with_py_passes`) are part of a configuration: their
rules and passes join this configuration's catalog only (`catalog()`), never a process-wide registry,
so two configurations with different rule files can live side by side (the window and a comparison,
two tests).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.switch_file import FusionSwitches, SwitchForms, parse_switch_file
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass
from fuselens.passes.autofuse.flags import AutofuseFlags, parse_autofuse_flags
from fuselens.passes.base import FusionPass
from fuselens.passes.ge_python.engine import pass_classes
from fuselens.passes.ge_python.loader import (
    ENV_PASS_PATH,
    PassLoad,
    describe_load_errors,
    load_pass_files,
    pass_path_entries,
)
from fuselens.passes.registry import catalog as builtin_catalog
from fuselens.passes.registry import find_pass, pass_order
from fuselens.passes.scope.user_rules import UserRule, catalog_with_rules, load_rule_file
from fuselens.passes.switch import SCOPE

AUTOFUSE_PASS_ID = AutoFusePass.id


def split_ids(values: Iterable[str] | str | None) -> list[str]:
    """Pass ids from comma lists (`"A,B"`, or several of them as a repeated option gives them)."""
    texts = [values] if isinstance(values, str) else list(values or [])
    return list(dict.fromkeys(item.strip() for text in texts for item in text.split(",") if item.strip()))


@dataclass(frozen=True)
class PassConfig:
    """Enabled passes (general ones always), AutoFuse flags, scope rule files, skipped matches.

    `enabled` lists the switchable passes that are on; general passes are on whatever it says.
    `foreign_switches` keeps the entries of an imported fusion switch file that name no FuseLens
    pass (GE passes FuseLens does not model), so exporting gives them back unchanged.
    """

    enabled: frozenset[str]
    autofuse: AutofuseFlags = field(default_factory=AutofuseFlags)
    scope_rule_files: tuple[str, ...] = ()
    skipped_matches: frozenset[str] = frozenset()
    foreign_switches: FusionSwitches = field(default_factory=FusionSwitches)
    rules: tuple[UserRule, ...] = field(default=(), compare=False, repr=False)
    py_pass_files: tuple[str, ...] = ()
    py_load: PassLoad | None = field(default=None, compare=False, repr=False)  # loaded again after pickling

    # ---- construction ------------------------------------------------------------------------
    @classmethod
    def default(cls) -> PassConfig:
        """Every pass that is on by default, FuseLens's AutoFuse defaults, no rule files."""
        return cls(frozenset(c.id for c in builtin_catalog() if c.default_enabled and not c.general))

    @classmethod
    def from_ids(cls, pass_ids: Iterable[str]) -> PassConfig:
        """Exactly these passes on (plus the general ones); an unknown id is an error."""
        config = cls(frozenset())
        return replace(config, enabled=frozenset(config._switchable(pass_ids)))

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PassConfig:
        """The command line's pass selection, applied in the order a user reads it: rule files,
        switch file, scope list, AUTOFUSE_FLAGS, then --enable and --disable, then skips."""
        config = cls.default()
        for path in getattr(args, "scope_rules", None) or []:
            config = config.with_scope_rules(path)
        py_passes = [*pass_path_entries(os.environ.get(ENV_PASS_PATH, "")), *(getattr(args, "py_pass", None) or [])]
        if py_passes:
            config = config.with_py_passes(py_passes)
            if config.py_pass_load.errors:
                raise FuseLensError(describe_load_errors(config.py_pass_load))
        if getattr(args, "switch_file", None):
            config = config.with_switch_file(args.switch_file)
        if getattr(args, "enable_scope_passes", None):
            config = config.with_scope_list(",".join(args.enable_scope_passes), exclusive=False)
        flags = getattr(args, "autofuse_flags", None)
        if flags is not None:  # argparse hands `--autofuse-flags=--` over as [] (it strips a `--` value)
            config = config.with_autofuse_flags(flags if isinstance(flags, str) else "--")
        config = config.with_passes(split_ids(getattr(args, "enable", None)), on=True)
        config = config.with_passes(split_ids(getattr(args, "disable", None)), on=False)
        skips = list(getattr(args, "skip_match", None) or [])
        if getattr(args, "skip_file", None):
            skips += read_skip_file(args.skip_file)
        return config.with_skipped(skips) if skips else config

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its catalog and its loaded pass files: user rule classes and GE Python passes are
        made at run time and rebuilt on demand (the pass files are loaded again where they run)."""
        return {**{k: v for k, v in self.__dict__.items() if k != "_catalog"}, "py_load": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ---- the catalog this configuration sees ---------------------------------------------------
    @cached_property
    def _catalog(self) -> list[type[FusionPass]]:
        passes = catalog_with_rules(self.rules)
        known = {c.id: c for c in passes}
        for cls in pass_classes(self.py_pass_load):
            if cls.id in known:
                raise FuseLensError(f"{cls.registered.source}: GE Python pass {cls.id} has the name of the "
                                    f"{known[cls.id].family} pass {cls.id}; give it a name of its own")
            known[cls.id] = cls
        return sorted(known.values(), key=pass_order)

    @property
    def py_pass_load(self) -> PassLoad:
        """What loading this configuration's GE Python pass files gave (passes, the user's errors)."""
        if self.py_load is None:
            object.__setattr__(self, "py_load", load_pass_files(self.py_pass_files))
        assert self.py_load is not None
        return self.py_load

    def catalog(self) -> list[type[FusionPass]]:
        """Built-in passes with this configuration's user rules, in toolchain order."""
        return list(self._catalog)

    def get_pass(self, pass_id: str) -> type[FusionPass]:
        """The pass by id, or by an earlier id (alias) with a one-line notice."""
        found = find_pass(self._catalog, pass_id)
        if found is None:
            raise FuseLensError(f"unknown pass {pass_id!r}; known passes: {', '.join(c.id for c in self._catalog)}")
        return found

    def pass_ids(self) -> list[str]:
        """The passes that run, general ones included, in toolchain order."""
        return [c.id for c in self._catalog if c.general or c.id in self.enabled]

    def is_enabled(self, pass_id: str) -> bool:
        found = self.get_pass(pass_id)
        return found.general or found.id in self.enabled

    def options(self) -> dict[str, Any]:
        """What every pass instance receives."""
        return {"autofuse_flags": self.autofuse, "skipped_matches": self.skipped_matches}

    def _switchable(self, pass_ids: Iterable[str]) -> list[str]:
        return [c.id for c in map(self.get_pass, pass_ids) if not c.general]

    # ---- edits (each returns a new configuration) ----------------------------------------------
    def with_pass(self, pass_id: str, on: bool) -> PassConfig:
        return self.with_passes([pass_id], on=on)

    def with_passes(self, pass_ids: Iterable[str], *, on: bool) -> PassConfig:
        """Switch passes on or off; switching a general pass off is an error that says so."""
        ids = list(pass_ids)
        for pass_id in ids:
            if not on and self.get_pass(pass_id).general:
                raise FuseLensError(f"{pass_id} is a general pass: it is always on and cannot be switched off")
        changed = set(self._switchable(ids))
        return replace(self, enabled=self.enabled | changed if on else self.enabled - changed)

    def with_scope_list(self, text: str, *, exclusive: bool = True) -> PassConfig:
        """`enable_scope_fusion_passes`: the named scope passes on; with `exclusive`, the other
        non-general scope passes off (the list is the whole scope switch, as the toolchain reads it)."""
        names = split_ids(text)
        scope_passes = [c for c in self._catalog if c.family == "scope"]
        for name in names:
            if find_pass(scope_passes, name) is None:
                raise FuseLensError(f"enable_scope_fusion_passes: unknown scope fusion pass {name!r}; "
                                    f"known: {', '.join(c.id for c in scope_passes)}")
        enabled = self.enabled - {c.id for c in scope_passes} if exclusive else self.enabled
        return replace(self, enabled=enabled | set(self._switchable(names)))

    def with_autofuse_flags(self, text: str | AutofuseFlags) -> PassConfig:
        """`AUTOFUSE_FLAGS`: the kernel categories and limits, and AutoFuse on or off by `--enable_autofuse`."""
        flags = parse_autofuse_flags(text) if isinstance(text, str) else text
        on = self.enabled | {AUTOFUSE_PASS_ID} if flags.enable_autofuse else self.enabled - {AUTOFUSE_PASS_ID}
        return replace(self, autofuse=replace(flags, enable_autofuse=True), enabled=on)

    def with_switch_file(self, source: str | Path, text: str | None = None) -> PassConfig:
        """A fusion switch file (path, or `text` read from `source`): `ALL` under GraphFusion switches every
        switchable pass; a GE/FE pass FuseLens models switches every FuseLens pass folding the same structure
        (ConvBatchnormFusionPass: the conv and the depthwise BatchNorm folds); a FuseLens id (or earlier id)
        then switches its own pass; names of no FuseLens pass are kept for export."""
        if text is None:
            try:
                text = Path(source).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise FuseLensError(f"{source}: cannot read the switch file ({e})") from None
        switches = parse_switch_file(text, str(source))
        enabled = set(self.enabled)
        foreign = FusionSwitches()
        for entries, foreign_entries in zip(switches.sections().values(), foreign.sections().values()):
            everything = entries.get("ALL") if entries is switches.graph_fusion else None  # UB fusion is GE's alone
            states = {c.id: everything for c in self._catalog if everything and not c.general}
            by_device = {name: [c for c in self._catalog if name in c.switch.ge_passes] for name in entries}
            by_id = {name: find_pass(self._catalog, name) for name in entries if not by_device[name]}
            for name, state in entries.items():  # a GE/FE pass first, so a FuseLens id entry can refine it
                states.update({c.id: state for c in by_device[name] if not c.general})
            for name, found in by_id.items():
                if found is None:
                    foreign_entries[name] = entries[name]
                elif not found.general:
                    states[found.id] = entries[name]
            for name, state in states.items():
                (enabled.add if state == "on" else enabled.discard)(name)
        return replace(self, enabled=frozenset(enabled), foreign_switches=foreign)

    def with_scope_rules(self, path: str | Path) -> PassConfig:
        """Add a user rule file: its rules join this configuration's catalog (switched off unless general)."""
        rules = load_rule_file(path)
        config = replace(self, scope_rule_files=(*self.scope_rule_files, str(path)), rules=(*self.rules, *rules))
        config._catalog  # noqa: B018  (a rule that clashes with an AMCT or AutoFuse pass is an error now)
        return config

    def with_py_passes(self, paths: Iterable[str | Path]) -> PassConfig:
        """GE Python pass files and directories (ASCEND_GE_PY_PASS_PATH's rules) join this configuration,
        their passes switched on; the user's load errors are `py_pass_load.errors`, not raised."""
        files = (*self.py_pass_files, *map(str, paths))
        load = load_pass_files(files)
        names = {p.name for p in load.passes}
        return replace(self, py_pass_files=files, py_load=load, enabled=self.enabled | names)

    def with_py_load(self, paths: Iterable[str | Path], load: PassLoad) -> PassConfig:
        """As `with_py_passes`, with a load made elsewhere (`PassLoad.from_json` of a helper process's): nothing
        is executed here; a pickled copy loads the files again where it runs them."""
        files = (*self.py_pass_files, *map(str, paths))
        return replace(self, py_pass_files=files, py_load=load, enabled=self.enabled | {p.name for p in load.passes})

    def without_scope_rules(self) -> PassConfig:
        kept = frozenset(c.id for c in builtin_catalog()) & self.enabled
        return replace(self, scope_rule_files=(), rules=(), enabled=kept)

    def with_skipped(self, match_ids: Iterable[str]) -> PassConfig:
        """Matches (`PassId:anchor`) the user keeps out of fusion while their pass stays on."""
        ids = [self._canonical_match_id(check_match_id(m, "skipped match")) for m in match_ids]
        return replace(self, skipped_matches=self.skipped_matches | frozenset(ids))

    def _canonical_match_id(self, match_id: str) -> str:
        """`OldId:anchor` -> `NewId:anchor`, so a skip saved under a pass's earlier id still applies."""
        pass_id, _, anchor = match_id.partition(":")
        found = find_pass(self._catalog, pass_id)
        return f"{found.id}:{anchor}" if found is not None else match_id

    def without_skipped(self, match_ids: Iterable[str]) -> PassConfig:
        return replace(self, skipped_matches=self.skipped_matches - frozenset(match_ids))

    # ---- export ------------------------------------------------------------------------------
    def scope_names(self) -> list[str]:
        """`enable_scope_fusion_passes`: the registered names of the non-general scope passes switched on, in
        toolchain order (each pass's `switch`; a user rule has none)."""
        names: list[str] = []
        for cls in self._catalog:
            if cls.switch.kind == SCOPE and not cls.switch.general and self.is_enabled(cls.id):
                names += [n for n in cls.switch.names if n not in names]
        return names

    def scope_list(self) -> str:
        """The `enable_scope_fusion_passes` value (`scope_names`, comma-separated)."""
        return ",".join(self.scope_names())

    def autofuse_flags(self) -> str:
        """The `AUTOFUSE_FLAGS` value; `--enable_autofuse=false` when AutoFuse is switched off."""
        return replace(self.autofuse, enable_autofuse=AUTOFUSE_PASS_ID in self.enabled).to_string()

    def switch_file(self, skipped: frozenset[str] = frozenset()) -> FusionSwitches:
        """The fusion switch file: GE/FE pass names only (the device passes FuseLens's folds stand for, each
        pass's `switch.ge_passes`), then the imported entries of GE passes FuseLens does not model.

        A GE/FE pass is on only when every FuseLens pass folding the same structure is on and none of its
        matches is skipped (`skipped`: the ids of passes with a skipped match). AMCT already did the enabled
        folds offline, so the device pass only matters where FuseLens left a structure unfolded, and there it
        must not fold either."""
        states: dict[str, str] = {}
        for cls in self._catalog:
            for name in cls.switch.ge_passes:
                on = self.is_enabled(cls.id) and cls.id not in skipped
                states[name] = "on" if on and states.get(name, "on") == "on" else "off"
        foreign = self.foreign_switches
        return FusionSwitches(graph_fusion={**foreign.graph_fusion, **states}, ub_fusion=dict(foreign.ub_fusion))

    def to_switch_forms(self) -> SwitchForms:
        return SwitchForms(split_ids(self.scope_list()), self.autofuse_flags(), self.switch_file())

    # ---- saved configurations ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"enabled": sorted(self.enabled), "autofuse_flags": self.autofuse.to_string(),
                "scope_rule_files": list(self.scope_rule_files), "skipped_matches": sorted(self.skipped_matches),
                **({"py_pass_files": list(self.py_pass_files)} if self.py_pass_files else {}),
                "foreign_switches": {k: v for k, v in self.foreign_switches.sections().items() if v}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "<configuration>") -> PassConfig:
        try:
            config = cls(frozenset())
            for path in data.get("scope_rule_files", []):
                config = config.with_scope_rules(path)
            config = config.with_autofuse_flags(data.get("autofuse_flags", ""))
            if data.get("py_pass_files"):
                config = config.with_py_passes(data["py_pass_files"])
            config = replace(config, enabled=frozenset(config._switchable(data.get("enabled", []))))
            foreign = data.get("foreign_switches", {})
            skipped = frozenset(map(config._canonical_match_id, data.get("skipped_matches", [])))
            return replace(config, skipped_matches=skipped,
                           foreign_switches=FusionSwitches(graph_fusion=dict(foreign.get("GraphFusion", {})),
                                                           ub_fusion=dict(foreign.get("UBFusion", {}))))
        except (AttributeError, TypeError) as e:
            raise FuseLensError(f"{source}: not a FuseLens pass configuration ({e})") from None

    @classmethod
    def load(cls, path: str | Path) -> PassConfig:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise FuseLensError(f"{path}: cannot read the pass configuration ({e})") from None
        if not isinstance(data, dict):
            raise FuseLensError(f"{path}: not a FuseLens pass configuration (expected a JSON object)")
        return cls.from_json(data, str(path))


def read_skip_file(path: str | Path) -> list[str]:
    """One match id per line (`PassId:anchor`); blank lines and `#` comments are ignored."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise FuseLensError(f"{path}: cannot read the skip file ({e})") from None
    ids = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [check_match_id(match_id, f"{path}, line {number}") for number, match_id in enumerate(ids, 1) if match_id]


def check_match_id(match_id: str, where: str) -> str:
    """A match id is `PassId:anchor`; anything else is an error naming where it came from."""
    if ":" not in match_id:
        raise FuseLensError(f"{where}: expected a match id PassId:anchor, got {match_id!r}")
    return match_id

