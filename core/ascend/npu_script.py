"""The scripts of an NPU bundle and what they are told.

The driver (host/npu_driver.py, written into the bundle as run_on_npu.py) and the session set-up
(core/devices/npu_session.py) are copied as they are; bundle.json carries everything that differs per model and
configuration: per side its graph, fetches, scope list, AUTOFUSE_FLAGS, switch file and skip file,
plus the dump variables both sides share and the command that imports the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fuselens.core.ascend.npu_target import TARGETS, target_of
from fuselens.core.devices import npu_session
from fuselens.core.package_data import package_file

MODES = {mode: target.title for mode, target in TARGETS.items()}
# The driver runs on the Ascend host, not in FuseLens: it is kept as data (host/, no package) and copied.
DRIVER_SOURCE = package_file(__package__, "host", "npu_driver.py")
# The session set-up is both: the local npu backend imports it, and a bundle carries a copy of its file.
SESSION_SOURCE = package_file(npu_session.__package__, "npu_session.py")
DRIVER_NAME = "run_on_npu.py"
BUNDLE_FORMAT, BUNDLE_VERSION = "fuselens-npu-bundle", 1
SIDES = ("original", "fused")
# GE graph dumps without weights (enough for fusion) of the stages that show it: DUMP_GRAPH_LEVEL's
# default (2, a whitelist) leaves out FE's graph fusion and AutoFuse, so name them as substrings
# (hicann/ge docs/zh/user_guides/env_vars/DUMP_GRAPH_LEVEL.md).
DUMP = {"DUMP_GE_GRAPH": "2",
        "DUMP_GRAPH_LEVEL": "PreRunBegin|FeGraphFusionAfter|AfterPrecisionRefine|AutoFuse|Build"}


def side_spec(*, graph: str, fetches: Sequence[str], scope_passes: Sequence[str], autofuse_flags: str,
              fusion_switch_file: str, autofuse_skip_file: str | None) -> dict[str, Any]:
    """One side of bundle.json; file names are relative to the bundle."""
    return {"graph": graph, "fetches": list(fetches), "scope_passes": list(scope_passes),
            "autofuse_flags": autofuse_flags, "fusion_switch_file": fusion_switch_file,
            "autofuse_skip_file": autofuse_skip_file}


def bundle_spec(*, model: str, mode: str, inputs: Mapping[str, tuple[str, Sequence[int]]],
                sides: Mapping[str, dict[str, Any]], steps: int, warmup: int, import_command: str) -> dict[str, Any]:
    """bundle.json: `inputs` placeholder -> (numpy dtype name, concrete shape); `import_command` holds
    `{results}` where the driver puts the results folder."""
    target = target_of(mode)
    if set(sides) != set(SIDES):
        raise ValueError(f"a bundle runs exactly the sides {SIDES}, not {sorted(sides)}")
    return {"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "model": model, "mode": mode,
            "tensorflow": target.version, "adapter": target.adapter, "steps": int(steps), "warmup": int(warmup),
            "inputs": {name: [dtype, list(shape)] for name, (dtype, shape) in inputs.items()},
            "dump": dict(DUMP), "sides": {side: sides[side] for side in SIDES}, "import_command": import_command}
