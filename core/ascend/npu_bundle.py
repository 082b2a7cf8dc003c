"""Write an NPU bundle: a folder an Ascend host runs as it is (`python run_on_npu.py`).

Two sides, each run by the driver in a process of its own with its own environment:

* original: the model as it is, with every toolchain fusion FuseLens models switched off
  (no non-general scope pass, AutoFuse off, the GE/FE passes FuseLens models closed);
* fused: the graph AMCT would hand over (FuseLens's AMCT passes applied, nothing else: scope fusion
  and AutoFuse are the toolchain's to do), with the user's scope list, AUTOFUSE_FLAGS, switch file
  and per-node AutoFuse skips.

Both graphs are written for the host's TensorFlow (npu_target.for_target). Everything the toolchain
leaves comes back under results/<side>/, and the bundle's README says what runs, what comes back and
which of the user's choices the toolchain cannot switch. The window (through its TensorFlow helper)
and the command line write it with the same call (session/npu_export.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuselens.core.ascend.npu_script import (
    DRIVER_NAME,
    DRIVER_SOURCE,
    DUMP,
    SESSION_SOURCE,
    SIDES,
    bundle_spec,
    side_spec,
)
from fuselens.core.ascend.npu_target import for_target, target_of
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.execute import resolve_input_shape
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.formats.switch_file import SwitchForms, skip_node_names_cfg
from fuselens.core.graph import Graph
from fuselens.core.measure.compare import pair_outputs

SIDE_TITLES = {"original": "baseline: the model as it is, every toolchain fusion FuseLens models switched off",
               "fused": "the graph AMCT hands over (FuseLens's AMCT passes), the toolchain switched as chosen"}


@dataclass
class BundleSide:
    """One side as the toolchain will run it."""

    graph: Graph
    forms: SwitchForms


@dataclass
class BundleReport:
    """What was written, for the front end to say."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    stripped: dict[str, int] = field(default_factory=dict)  # side -> default-valued attributes stripped
    limits: list[str] = field(default_factory=list)
    import_command: str = ""
    switches: dict[str, str] = field(default_factory=dict)  # side -> its switches in one line

    @property
    def driver(self) -> Path:
        return self.folder / DRIVER_NAME

    def summary(self, title: str) -> str:
        """The bundle in a few lines: per side its switches, what the toolchain cannot switch, what to run next."""
        lines = [f"wrote {self.folder}/ for {title}: {DRIVER_NAME}, original.pb, fused.pb, switches/, bundle.json, "
                 "README.md"]
        lines += [f"  {side:8s} {text}" for side, text in self.switches.items()]
        if self.limits:
            lines += ["the toolchain cannot switch:", *(f"  - {limit}" for limit in self.limits)]
        return "\n".join([*lines, f"on the Ascend host: python {self.driver}",
                           "then, here: " + self.import_command.replace("{results}", str(self.folder / "results"))])


def write_npu_bundle(folder: str | os.PathLike[str], *, model: str, original: BundleSide, fused: BundleSide,
                     mode: str, import_command: str, limits: Sequence[str] = (),
                     passes: Sequence[tuple[str, str, str]] = (),
                     original_to_final: Mapping[str, Sequence[str]] | None = None,
                     input_shapes: Mapping[str, Sequence[int]] | None = None, steps: int = 100, warmup: int = 10,
                     protect: str | None = None) -> BundleReport:
    """The bundle in `folder`. `import_command` has `{results}` for the results folder; `limits` are the
    choices the toolchain cannot switch; `passes` rows (pass, state, toolchain switch) for its README.
    A graph the target TensorFlow cannot import is refused here, before anything is written."""
    target = target_of(mode)
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise FuseLensError(f"{root}: is a file; give a folder for the NPU bundle")
    if root.suffix == ".py":
        raise FuseLensError(f"{root}: the NPU export writes a bundle folder (its script is run_on_npu.py inside); "
                            "give a folder name, e.g. -o npu_bundle/")
    graphs = {side: for_target(s.graph.graph_def.SerializeToString(deterministic=True), mode, f"{model} ({side}.pb)")
              for side, s in (("original", original), ("fused", fused))}
    inputs = {name: (original.graph.placeholder_spec(name)[0],
                     resolve_input_shape(original.graph, name, input_shapes))
              for name in original.graph.placeholders()}
    pairs = pair_outputs(original.graph, fused.graph, original_to_final)
    fetches = {"original": [o for o, _ in pairs], "fused": [f for _, f in pairs]}
    report = BundleReport(root, limits=list(limits), import_command=import_command,
                          stripped={side: stripped for side, (_, stripped) in graphs.items()})

    def write(relative: str, data: bytes) -> str:
        report.files.append(write_bytes_atomic(root / relative, data, protect=protect))
        return relative

    sides = {}
    for side, s in (("original", original), ("fused", fused)):
        switches = s.forms.fusion_switches
        write(f"switches/{side}/fusion_switch.cfg", switches.to_lines().encode())
        skip = (write(f"switches/{side}/autofuse_skip.ini", skip_node_names_cfg(s.forms.autofuse_skip_nodes).encode())
                if s.forms.autofuse_skip_nodes else None)
        sides[side] = side_spec(graph=write(f"{side}.pb", graphs[side][0]), fetches=fetches[side],
                                scope_passes=s.forms.scope_passes, autofuse_flags=s.forms.autofuse_flags,
                                fusion_switch_file=write(f"switches/{side}/fusion_switch.json",
                                                         switches.to_json_text().encode()),
                                autofuse_skip_file=skip)
        report.switches[side] = describe_switches(s.forms, skip)
    spec = bundle_spec(model=model, mode=mode, inputs=inputs, sides=sides, steps=steps, warmup=warmup,
                       import_command=import_command)
    write("bundle.json", json.dumps(spec, indent=2).encode() + b"\n")
    write("npu_session.py", SESSION_SOURCE.read_bytes())
    write(DRIVER_NAME, DRIVER_SOURCE.read_bytes())
    (root / DRIVER_NAME).chmod(0o755)
    write("README.md", bundle_readme(spec, report, passes, target.title).encode())
    return report


def describe_switches(forms: SwitchForms, skip_file: str | None) -> str:
    """One side's switches in one line (the CLI and the bundle's README)."""
    entries = ", ".join(f"{name} {state}" for section in forms.fusion_switches.sections().values()
                        for name, state in section.items()) or "empty"
    skips = f"; AutoFuse skips {len(forms.autofuse_skip_nodes)} node(s) ({skip_file})" if skip_file else ""
    return (f"enable_scope_fusion_passes={','.join(forms.scope_passes) or '(none)'}; "
            f"AUTOFUSE_FLAGS={forms.autofuse_flags}; fusion switch file: {entries}{skips}")


def bundle_readme(spec: Mapping, report: BundleReport, passes: Sequence[tuple[str, str, str]], title: str) -> str:
    """What runs, what comes back, and what the toolchain cannot switch, for whoever runs the bundle."""
    sides = spec["sides"]
    command = spec["import_command"].replace("{results}", "results")
    lines = [f"# NPU bundle: {spec['model']} on {title}", "",
             "Written by `fuselens export-npu-script`. On the Ascend host, in this folder:", "", "```sh",
             f"python {DRIVER_NAME}            # both sides, then msprof export; --help for steps and paths",
             "```", "", "Then bring `results/` back and, where FuseLens runs:", "", "```sh", command, "```", "",
             "which sets what came back against FuseLens's prediction (found / not found per fusion, the NPU "
             "time of each, the toolchain's own fusions FuseLens did not predict, the per-pass ledger).", "",
             "## What it runs", "",
             "Each side runs in a process of its own: the toolchain reads `AUTOFUSE_FLAGS` and the dump variables "
             "once per process, so an unfused baseline and an AutoFuse run cannot share one.", "",
             "| side | graph | switches |", "|---|---|---|"]
    lines += [f"| **{side}**: {SIDE_TITLES[side]} | `{sides[side]['graph']}` | {report.switches[side]} |"
              for side in SIDES]
    stripped = ", ".join(f"{side} {n}" for side, n in report.stripped.items())
    lines += ["", f"Both graphs are written for TensorFlow {spec['tensorflow']} ({spec['adapter']}): attributes "
              f"equal to their op-def default were stripped ({stripped}), as TensorFlow does for an older "
              "consumer, and every op and remaining attribute was checked against that version's op registry.",
              "", "Both sides also set: " + ", ".join(f"`{k}={v}`" for k, v in DUMP.items())
              + ", `DUMP_GRAPH_PATH=results/<side>/ge_dumps`, `ASCEND_WORK_PATH=results/<side>/ascend_work` "
              "(FE's fusion_result.json, `export_compile_stat=2`), profiling on (op_summary, op_statistic, "
              "fusion_op, task_time and the msprof timeline after `msprof --export=on`).", "",
              "## What comes back", "", "```", "results/", "  original/  and  fused/, each with:",
              "    ge_dumps/pid_<pid>_deviceid_<n>/ge_proto_*.txt   GE's graph after each fusion stage",
              "    fusion_result.json                             FE's per-pass match and effect counts",
              "    profiling/PROF_*/mindstudio_profiler_output/    op_summary, fusion_op, task_time, msprof_*.json",
              "    outputs.npz, run.json                          outputs, step times, the switches it ran with",
              "```", "", "## What the toolchain cannot switch", ""]
    lines += [f"- {limit}" for limit in report.limits] or ["Nothing: every choice reaches the toolchain."]
    if passes:
        lines += ["", "## Passes and their toolchain switches", "", "| pass | chosen | toolchain switch |",
                  "|---|---|---|"]
        lines += [f"| {pass_id} | {state} | {switch} |" for pass_id, state, switch in passes]
    return "\n".join(lines) + "\n"
