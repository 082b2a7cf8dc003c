"""How the Ascend toolchain switches a FuseLens pass: the value every pass module declares as `switch`.

FuseLens's pass ids mean nothing to the toolchain unless the toolchain registered that name, so an
NPU run cannot be switched by them. Each pass says what does switch it:

* scope passes: the registered scope pass names for `enable_scope_fusion_passes` (general ones run
  whatever the list says);
* AutoFuse: `AUTOFUSE_FLAGS` (on/off and the opt-in kinds), per node `AUTOFUSE_DFX_FLAGS`'s
  `--skip_node_names_cfg` .ini;
* AMCT passes: nothing in the toolchain; AMCT applies them offline, so they are in the graph handed
  over or not. Where GE/FE runs a graph fusion pass doing the same fold on the device, the fusion
  switch file names it, so a fold FuseLens leaves out is not done on the device either.

Every name a pass declares was checked against the toolchain's own registrations; `sources` cites
them (repository and path, or the CANN documentation page). passes/toolchain.py turns the switches
of a configuration's passes into the NPU bundle's two sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCOPE, AUTOFUSE, AMCT, NONE = "scope", "autofuse", "amct", "none"

# Where the names were checked (repository path, or documentation page), cited by more than one family.
BUILTIN_SCOPE_SOURCE = ("dengguojie/vue-element-admin ops/built-in/framework/tf_scope_fusion_passes/"
                        "register_scope_fusion_passes.cc (a copy of Ascend's built-in ops tree; "
                        "REGISTER_SCOPE_FUSION_PASS with the general flag)")


@dataclass(frozen=True)
class ToolchainSwitch:
    """How the toolchain switches one FuseLens pass."""

    kind: str  # SCOPE, AUTOFUSE, AMCT or NONE
    names: tuple[str, ...]  # registered scope pass names; AUTOFUSE_FLAGS keys; AMCT's name of the fusion
    ge_passes: tuple[str, ...] = ()  # GE/FE graph fusion passes doing the same fold on the device
    general: bool = False  # a general scope pass: the toolchain always runs it
    note: str = ""
    sources: tuple[str, ...] = ()

    def describe(self) -> str:
        """The switch in words, as the bundle README and the CLI list it."""
        if self.kind == SCOPE:
            names = " or ".join(self.names)
            return f"{names} (general: always on)" if self.general else f"enable_scope_fusion_passes: {names}"
        if self.kind == AUTOFUSE:
            return "AUTOFUSE_FLAGS (" + ", ".join(self.names) + ")"
        if self.kind == AMCT:
            device = f"; on the device FE's {', '.join(self.ge_passes)} (fusion switch file)" if self.ge_passes else ""
            return f"AMCT, applied offline ({self.names[0]}){device}"
        return "no toolchain switch"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names), "ge_passes": list(self.ge_passes),
                "general": self.general, "switch": self.describe(), "note": self.note, "sources": list(self.sources)}


# A pass the toolchain registered under no name: a user scope rule, or a pass a plugin or a test adds.
NO_SWITCH = ToolchainSwitch(NONE, (), note="a FuseLens user scope rule: the toolchain's parser runs only scope passes "
                                           "registered in C++ (REGISTER_SCOPE_FUSION_PASS), so no switch reaches it; "
                                           "add its name to enable_scope_fusion_passes yourself if you built such a "
                                           "plugin", sources=(BUILTIN_SCOPE_SOURCE,))
