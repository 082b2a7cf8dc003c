"""The layout cache: by structure, in memory (least recently used out) and on disk."""

from __future__ import annotations

import numpy as np

from fuselens.core.layout import SCOPE_PREFIX, Layout, LayoutCache, layout_graph, structure_key


def test_cache_by_structure_in_memory_and_on_disk(load_sample, tmp_path):
    graph = load_sample("keras_bn_small_ops")
    cache = LayoutCache(tmp_path)
    first = layout_graph(graph, cache=cache)
    assert not first.cached and list(tmp_path.glob("*.json"))
    assert layout_graph(graph, cache=cache) is first
    fresh = layout_graph(graph, cache=LayoutCache(tmp_path))  # a new process: read from disk
    assert fresh.cached and fresh.to_json() == first.to_json()
    collapsed = layout_graph(graph, {"bn_default"}, cache=cache)
    assert not collapsed.cached and SCOPE_PREFIX + "bn_default" in collapsed.nodes


def test_the_memory_cache_evicts_the_least_recently_used():
    cache = LayoutCache(limit=2)
    first, second, third = (Layout({}, [], {}) for _ in range(3))
    cache.put("first", first)
    cache.put("second", second)
    assert cache.get("first") is first  # used again: now the most recent
    cache.put("third", third)
    assert cache.get("second") is None  # first in, first out would have dropped `first` instead
    assert cache.get("first") is first and cache.get("third") is third


def test_structure_key_ignores_weight_values_but_not_wiring_or_collapse(load_sample):
    graph = load_sample("conv_bn")
    editor = graph.editor()
    const = next(n.name for n in graph if n.op == "Const")
    node = editor.mutable(const)
    value = node.attr["value"].tensor
    value.tensor_content = (np.frombuffer(value.tensor_content, np.uint8) ^ 1).tobytes()
    reweighted = editor.build()
    assert structure_key(reweighted) == structure_key(graph)
    assert structure_key(graph, {"bn"}) != structure_key(graph)
    rewired = graph.editor()
    relu = next(n.name for n in graph if n.op == "Relu")
    rewired.remove(relu)
    assert structure_key(rewired.build()) != structure_key(graph)
