"""Write the NPU run script with the original and fused .pb files next to it (the window's export).

`fuselens export-npu-script` writes the same three files from the command line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.execute import resolve_input_shape
from core.graph import Graph
from core.io import write_bytes_atomic
from core.runtime.compare import pair_outputs
from core.runtime.npu_script import render_npu_script
from core.runtime.switch_file import PassChoice


def write_npu_bundle(script: str | os.PathLike[str], *, model: str, original: Graph, fused: Graph,
                     config: PassChoice, original_to_final: Mapping[str, Sequence[str]] | None = None,
                     input_shapes: Mapping[str, Sequence[int]] | None = None, mode: str = "tf1",
                     steps: int = 100, warmup: int = 10, protect: str | None = None) -> list[Path]:
    """The script and `<stem>_original.pb` / `<stem>_fused.pb`; returns the three paths written.
    `config` made `fused`; the script carries its passes in the toolchain's three switch forms."""
    script = Path(script)
    inputs = {name: (original.placeholder_spec(name)[0], resolve_input_shape(original, name, input_shapes))
              for name in original.placeholders()}
    pairs = pair_outputs(original, fused, original_to_final)
    files = {"original": f"{script.stem}_original.pb", "fused": f"{script.stem}_fused.pb"}
    graphs = {"original": (files["original"], [o for o, _ in pairs]), "fused": (files["fused"], [f for _, f in pairs])}
    text = render_npu_script(mode=mode, model=model, inputs=inputs, graphs=graphs, forms=config.to_switch_forms(),
                             steps=steps, warmup=warmup)
    written = [write_bytes_atomic(script.with_name(files[label]), graph.graph_def.SerializeToString(deterministic=True),
                                  protect=protect) for label, graph in (("original", original), ("fused", fused))]
    return [*written, write_bytes_atomic(script, text.encode(), protect=protect)]
