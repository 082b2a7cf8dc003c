"""Provenance composed rewrite by rewrite agrees with the mapping composed from scratch (the definition), on random
sequences of rewrites that remove, modify, create and remove again (a pass's dead constants: removals alone)."""

from __future__ import annotations

import random

import pytest

from fuselens.core.graph.provenance import Provenance, Rewrite


def _composed_from_scratch(original: list[str], rewrites: list[Rewrite]) -> dict[str, frozenset[str]]:
    """Final node -> original nodes, by the definition: a node made by a rewrite comes from whatever that rewrite's
    nodes came from (and what it came from itself when it was kept by name)."""
    origin = {name: frozenset((name,)) for name in original}
    for rewrite in rewrites:
        sources = frozenset().union(*(origin.get(name, frozenset((name,))) for name in rewrite.before))
        for name in rewrite.removed:
            origin.pop(name, None)
        for name in rewrite.after:
            origin[name] = sources | origin.get(name, frozenset())
    return origin


@pytest.mark.parametrize("seed", range(20))
def test_composed_provenance_matches_the_definition(seed):
    rng = random.Random(seed)
    original = [f"n{i}" for i in range(40)]
    alive, made, rewrites = list(original), 0, []
    for index in range(25):
        if rng.random() < 0.3:  # a removal alone, as a pass's pruned constants are recorded
            removed = tuple(rng.sample(alive, min(len(alive), rng.randint(1, 6))))
            rewrite = Rewrite("p", -1, removed=removed)
        else:
            chosen = rng.sample(alive, min(len(alive), rng.randint(1, 4)))
            cut = rng.randint(0, len(chosen))
            created = tuple(f"new{made + k}" for k in range(rng.randint(0, 2)))
            made += len(created)
            rewrite = Rewrite("p", index, removed=tuple(chosen[:cut]), modified=tuple(chosen[cut:]), created=created)
        alive = [name for name in alive if name not in rewrite.removed] + list(rewrite.created)
        rewrites.append(rewrite)
    provenance = Provenance(tuple(original))
    for rewrite in rewrites:
        provenance.record(rewrite)
    expected = _composed_from_scratch(original, rewrites)
    for name in alive:
        assert provenance.origins(name) == expected[name], name
    for source in original:
        assert provenance.descendants(source) == sorted(n for n in alive if source in expected[n]), source
