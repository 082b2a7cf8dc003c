"""Near-miss reason classes: the kind of refusal a near miss's reason is, so a zoo's near misses count by
kind ("the Keras 3 LayerNorm layout: 23 matches in 6 models"), not by their text, which names nodes.

A reason the table below knows gets its kind and title; any other gets a kind of its own text with the
node names and numbers taken out (the same refusal on two models is the same kind).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ReasonKind:
    id: str
    title: str  # reads after "the zoo loses N matches to ..."


# In order: the first whose pattern is found in the reason text wins; a title's {0} is the pattern's group.
KNOWN_KINDS: tuple[tuple[re.Pattern[str], ReasonKind], ...] = tuple(
    (re.compile(pattern), ReasonKind(kind, title)) for pattern, kind, title in [
        (r"Keras 3 LayerNormalization", "keras3-layernorm", "the Keras 3 LayerNorm layout"),
        (r"reads a weight through a ReadVariableOp", "tf2-variable-read", "weights read through ReadVariableOp "
                                                                          "(a TF 2.x graph)"),
        (r"is in training mode", "bn-training", "a BatchNorm in training mode"),
        (r"reads output \d+ of .* \(its batch statistics\)", "bn-statistics-read", "a BatchNorm's batch statistics "
                                                                                  "read by another node"),
        (r"overlaps match #\d+", "overlap", "an overlap with an earlier match"),
        (r"outside the match$|outside the match \(|consumers: it is also read by", "intermediate-read",
         "an intermediate read outside the match"),
        (r"consumer outside the group", "intermediate-read-group", "an intermediate read outside the AutoFuse group"),
        (r"weight .* is shared with", "shared-weight", "a weight shared outside the match"),
        (r"would create a cycle", "cycle", "a cycle through a node outside the match"),
        (r"gives NaN or Inf", "nan-fold", "a fold giving NaN or Inf"),
        (r"alone is not fused", "single-op-group", "a single-op AutoFuse group"),
        (r"the (\w+) category is off", "category-off-{0}", "the AutoFuse {0} category switched off"),
        (r"is not a vector op", "not-vector-op", "a non-vector op between two AutoFuse chains"),
        (r"over --max_fusion_size", "max-fusion-size", "the AutoFuse --max_fusion_size"),
        (r"over the limit of", "kernel-inputs", "the AutoFuse kernel input limit"),
        (r"elementwise producers", "reduce-producers", "too many producers of a reduce"),
        (r"shape unknown|is unknown|records no shape", "shape-unknown", "an unknown shape"),
        (r"is \d+-D; FusedBatchNormV3 needs a 4-D input", "bn-rank", "a BatchNorm input that is not 4-D"),
        (r"is not a Conv2D or DepthwiseConv2dNative|is not a Conv2D branch", "bn-input-op",
         "a BatchNorm after an op that is not a convolution"),
        (r"computes in \w+", "dtype", "a dtype the fused op does not compute in"),
        (r"is not a constant", "not-constant", "an operand that is not a constant"),
        (r"not a scalar|not one value|per-channel vector", "not-scalar", "a vector where a scalar is needed"),
        (r"without a sibling", "unpaired-scope", "a scope without its sibling scope"),
        (r"does not match the .* pattern", "sibling-mismatch", "a sibling scope that does not match"),
        (r"pattern needs", "scope-census", "a scope whose op census differs from the pattern"),
        (r"mix data formats", "data-format", "mixed data formats"),
        (r"not the channel axis", "concat-axis", "a concat off the channel axis"),
    ]
)
_NUMBER = re.compile(r"(?<![\w/])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w/])")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_OP = re.compile(r"\((?:[A-Z]\w*)\)")
_PATHLIKE = re.compile(r"\b[\w.\-]+(?:/[\w.\-:]+)+")


def reason_kind(reason: str, names: Iterable[str] = ()) -> ReasonKind:
    """The class of `reason`; `names` are the near miss's nodes (taken out of an unknown reason's text)."""
    for pattern, kind in KNOWN_KINDS:
        found = pattern.search(reason)
        if found:
            return ReasonKind(kind.id.format(*found.groups()), kind.title.format(*found.groups()))
    template = reason
    for name in sorted(set(names), key=len, reverse=True):
        if name:
            template = template.replace(name, "…")
    template = _NUMBER.sub("N", _PATHLIKE.sub("…", _QUOTED.sub("…", _OP.sub("(op)", template))))
    template = re.sub(r"\s+", " ", template).strip()[:160]
    digest = hashlib.sha1(template.encode()).hexdigest()[:10]
    return ReasonKind(f"other-{digest}", template)


def top_by_kind(near_misses: list[dict], count: int) -> list[int]:
    """Indexes of a model's top near misses: the first of each reason kind, the kinds it has most of first."""
    first: dict[str, int] = {}
    tally: dict[str, int] = {}
    for i, near in enumerate(near_misses):
        first.setdefault(near["kind"], i)
        tally[near["kind"]] = tally.get(near["kind"], 0) + 1
    return [first[kind] for kind in sorted(first, key=lambda k: (-tally[k], first[k]))][:count]
