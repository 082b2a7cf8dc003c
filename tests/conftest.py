"""Shared fixtures. Tests run headless (Qt offscreen) and quiet (TF C++ logs off)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# oneDNN on, as TensorFlow has it by default on an x86 CPU with AVX-512 (VNNI, BF16) or AMX; on one without
# (this project's AMD EPYC machine) it is off unless asked for. The tests of the runner's oneDNN path (its
# LayerNorms, its fused convolutions' kernels) hold on every x86 machine so; the path without oneDNN is
# tested where a test sets TF_ENABLE_ONEDNN_OPTS=0 for its runner (tests/zoo/test_zoo.py).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import pytest

from fuselens.core.formats.loaders import load_model


@pytest.fixture(scope="session")
def load_sample():
    """Load a built-in sample once per session (graphs are immutable, so sharing is safe)."""
    cache = {}

    def load(name: str):
        if name not in cache:
            cache[name] = load_model(name).graph
        return cache[name]

    return load


@pytest.fixture
def own_fuselens_dirs(tmp_path, monkeypatch):
    """Hosts and run history of the test's own (FUSELENS_CONFIG_DIR / FUSELENS_DATA_DIR), not the user's."""
    monkeypatch.setenv("FUSELENS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("FUSELENS_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """An sshd on a loopback port with a generated key (tests/ssh_host.py), shared by a module's tests."""
    from tests.ssh_host import sshd_unavailable, start_sshd

    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()
