"""AUTOFUSE_FLAGS in the toolchain's own syntax: parse a user's string, produce one to export.

`--enable_autofuse=true;--autofuse_enable_pass=reduce,concat;--max_fusion_size=64`: items
`--key=value` separated by `;`, list values separated by `,`. Pointwise and broadcast are on
once AutoFuse is enabled; reduce and concat only when listed in `--autofuse_enable_pass`.

One difference from the toolchain, on purpose: FuseLens has AutoFuse ON by default (showing
fusion is the point), so the exported string always states `--enable_autofuse` explicitly and
means the same thing to the toolchain as to FuseLens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fuselens.core.errors import FuseLensError
from fuselens.core.wording import shown

POINTWISE = "pointwise"
BROADCAST = "broadcast"
REDUCE = "reduce"
CONCAT = "concat"
# Categories on once AutoFuse is enabled, and those that must be asked for.
DEFAULT_CATEGORIES = frozenset({POINTWISE, BROADCAST})
OPT_IN_CATEGORIES = frozenset({REDUCE, CONCAT})
# Names the toolchain accepts for its other internal kinds; FuseLens classifies no op into them,
# so listing one is accepted (a real AUTOFUSE_FLAGS string imports) and changes no grouping.
OTHER_TOOLCHAIN_CATEGORIES = frozenset({"split", "slice", "gather", "transpose", "cube"})
KNOWN_CATEGORIES = DEFAULT_CATEGORIES | OPT_IN_CATEGORIES | OTHER_TOOLCHAIN_CATEGORIES
CATEGORY_ALIASES = {"elementwise": POINTWISE}

DEFAULT_MAX_FUSION_SIZE = 64
DEFAULT_RECOMPUTATION_THRESHOLD = 1
MAX_RECOMPUTATION_THRESHOLD = 255


@dataclass(frozen=True)
class AutofuseFlags:
    """The parsed AUTOFUSE_FLAGS (FuseLens defaults: AutoFuse on, toolchain limits)."""

    enable_autofuse: bool = True
    enable_pass: tuple[str, ...] = ()
    disable_pass: tuple[str, ...] = ()
    max_fusion_size: int = DEFAULT_MAX_FUSION_SIZE
    recomputation_threshold: int = DEFAULT_RECOMPUTATION_THRESHOLD
    categories: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        both = sorted(set(self.enable_pass) & set(self.disable_pass))
        if both:
            raise FuseLensError(f"AUTOFUSE_FLAGS: {', '.join(both)} is both enabled (--autofuse_enable_pass) "
                                "and disabled (--autofuse_disable_pass)")
        enabled = (DEFAULT_CATEGORIES | set(self.enable_pass)) - set(self.disable_pass)
        object.__setattr__(self, "categories", frozenset(enabled) if self.enable_autofuse else frozenset())

    @property
    def fuses_anything(self) -> bool:
        return self.enable_autofuse and self.max_fusion_size > 0

    def is_enabled(self, category: str) -> bool:
        return category in self.categories

    def how_to_enable(self, category: str) -> str:
        """The flag change that switches `category` on, worded for a near miss."""
        if category in self.disable_pass:
            return f"remove {category} from --autofuse_disable_pass"
        return f"enable it with --autofuse_enable_pass={category}"

    def to_string(self) -> str:
        """The AUTOFUSE_FLAGS value: --enable_autofuse always, other items when not the default."""
        items = [f"--enable_autofuse={'true' if self.enable_autofuse else 'false'}"]
        if self.enable_pass:
            items.append(f"--autofuse_enable_pass={','.join(self.enable_pass)}")
        if self.disable_pass:
            items.append(f"--autofuse_disable_pass={','.join(self.disable_pass)}")
        if self.max_fusion_size != DEFAULT_MAX_FUSION_SIZE:
            items.append(f"--max_fusion_size={self.max_fusion_size}")
        if self.recomputation_threshold != DEFAULT_RECOMPUTATION_THRESHOLD:
            items.append(f"--recomputation_threshold={self.recomputation_threshold}")
        return ";".join(items)


def parse_autofuse_flags(text: str) -> AutofuseFlags:
    """An AutofuseFlags from an AUTOFUSE_FLAGS string; a bad item is a FuseLensError quoting it."""
    values: dict[str, object] = {}
    for raw in text.split(";"):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not key.startswith("--") or not sep:
            raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: expected --key=value")
        key = key[2:].strip()
        if key not in _PARSERS:
            raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: unknown flag {shown('--' + key)} "
                                f"(known: {', '.join('--' + k for k in _PARSERS)})")
        field_name = _FIELDS.get(key, key)
        if field_name in values:
            raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: --{key} is given twice")
        values[field_name] = _PARSERS[key](item, value.strip())
    return AutofuseFlags(**values)  # type: ignore[arg-type]


def as_autofuse_flags(value: AutofuseFlags | str | None) -> AutofuseFlags:
    """Pass options carry the flags as a string (CLI, config) or already parsed (GUI)."""
    if value is None:
        return AutofuseFlags()
    if isinstance(value, AutofuseFlags):
        return value
    if isinstance(value, str):
        return parse_autofuse_flags(value)
    raise FuseLensError(f"autofuse_flags: expected an AUTOFUSE_FLAGS string, got {type(value).__name__}")


def _parse_bool(item: str, value: str) -> bool:
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: expected true or false")
    return lowered == "true"


def _parse_categories(item: str, value: str) -> tuple[str, ...]:
    names: list[str] = []
    for part in value.split(","):
        name = CATEGORY_ALIASES.get(part.strip().lower(), part.strip().lower())
        if not name:
            continue
        if name not in KNOWN_CATEGORIES:
            raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: unknown category {part.strip()!r} "
                                f"(known: {', '.join(sorted(KNOWN_CATEGORIES))})")
        if name not in names:
            names.append(name)
    return tuple(names)


def _parse_int(low: int, high: int | None):
    def parse(item: str, value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < low or (high is not None and number > high):
            bound = f"between {low} and {high}" if high is not None else f"an integer >= {low}"
            raise FuseLensError(f"AUTOFUSE_FLAGS: bad item {item!r}: expected {bound}")
        return number

    return parse


_PARSERS = {
    "enable_autofuse": _parse_bool,
    "autofuse_enable_pass": _parse_categories,
    "autofuse_disable_pass": _parse_categories,
    "max_fusion_size": _parse_int(0, None),
    "recomputation_threshold": _parse_int(0, MAX_RECOMPUTATION_THRESHOLD),
}
_FIELDS = {"autofuse_enable_pass": "enable_pass", "autofuse_disable_pass": "disable_pass"}
