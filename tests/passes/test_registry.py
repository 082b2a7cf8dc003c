"""The catalog finds a built-in pass by its module alone: no list of pass modules to keep."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import fuselens.passes.amct
import fuselens.passes.autofuse
import fuselens.passes.scope

ROOT = Path(__file__).resolve().parents[2]
_FRESH = ("import json, sys; from fuselens.passes.registry import catalog; found = catalog(); "
          "print(json.dumps([sorted(m for m in sys.modules if m.startswith('fuselens.passes.')), "
          "sorted({c.__module__ for c in found})]))")


def test_a_fresh_process_reading_the_catalog_imports_every_module_of_the_family_packages():
    out = subprocess.run([sys.executable, "-c", _FRESH], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True).stdout
    imported, registering = json.loads(out)
    for package in (fuselens.passes.scope, fuselens.passes.amct, fuselens.passes.autofuse):
        modules = [m.name for m in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")]
        assert modules and set(modules) <= set(imported)
    assert {"fuselens.passes.scope.layer_norm", "fuselens.passes.amct.conv_bn",
            "fuselens.passes.autofuse.autofuse_pass"} <= set(registering)
