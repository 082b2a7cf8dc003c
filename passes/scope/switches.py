"""The toolchain's scope switch `enable_scope_fusion_passes`: a comma list of scope pass names.

ATC takes it as `--enable_scope_fusion_passes=A,B`, a TF session as
`custom_op.parameter_map["enable_scope_fusion_passes"]`. General passes are always on, so naming
one is accepted and changes nothing, and the list FuseLens writes leaves them out.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.errors import FuseLensError
from passes.registry import catalog


def scope_pass_ids() -> list[str]:
    """Every registered scope pass (built-in and installed user rules), in toolchain order."""
    return [c.id for c in catalog() if c.family == "scope"]


def parse_enable_scope_fusion_passes(values: str | Iterable[str] | None) -> list[str]:
    """Pass ids from one comma list or several; an unknown name is an error listing the known ones."""
    texts = [values] if isinstance(values, str) else list(values or [])
    names = [name.strip() for text in texts for name in text.split(",") if name.strip()]
    known = scope_pass_ids()
    for name in names:
        if name not in known:
            raise FuseLensError(f"enable_scope_fusion_passes: unknown scope fusion pass {name!r}; "
                                f"known: {', '.join(known)}")
    return list(dict.fromkeys(names))


def format_enable_scope_fusion_passes(enabled_ids: Iterable[str]) -> str:
    """The comma list for the toolchain from a set of enabled pass ids (any family; general ones
    and non-scope passes are left out), in toolchain order."""
    enabled = set(enabled_ids)
    return ",".join(c.id for c in catalog() if c.family == "scope" and not c.general and c.id in enabled)


def select_scope_passes(enable: str | Iterable[str] | None, rules_file: str | None) -> list[str]:
    """What `--scope-rules FILE --enable-scope-passes A,B` mean: install the file's rules (or none),
    then the ids to switch on."""
    from passes.scope.user_rules import install_rules, load_rule_file

    install_rules(load_rule_file(rules_file) if rules_file else [])
    return parse_enable_scope_fusion_passes(enable)
