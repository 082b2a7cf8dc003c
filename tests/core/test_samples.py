from __future__ import annotations

import pytest

from fuselens.core.formats.samples import SAMPLE_DIR, SAMPLES, load_build_script


@pytest.mark.parametrize("name", [n for n, s in SAMPLES.items() if not s.cached])
def test_committed_sample_rebuilds_byte_identically(name):
    builder = load_build_script()
    assert builder.build(name) == (SAMPLE_DIR / f"{name}.pb").read_bytes()


def test_bn_statistics_are_random_not_default(load_sample):
    g = load_sample("conv_bn")
    for stat in ("bn1/mean", "bn1/variance", "bn1/gamma", "bn1/beta"):
        value = g.const_value(stat)
        assert value.std() > 0.05, stat
    assert abs(g.const_value("bn1/mean")).max() > 0.1
    assert abs(g.const_value("bn1/variance") - 1).max() > 0.1
