"""Shared fixtures. Tests run headless (Qt offscreen) and quiet (TF C++ logs off)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

from core.loaders import load_model


@pytest.fixture(scope="session")
def load_sample():
    """Load a built-in sample once per session (graphs are immutable, so sharing is safe)."""
    cache = {}

    def load(name: str):
        if name not in cache:
            cache[name] = load_model(name).graph
        return cache[name]

    return load
