"""A stand-in Ascend host for the NPU bundle's tests: stub npu_bridge / npu_device modules and a stub
`msprof`, written into a tmp dir, that record what they were given and leave what the toolchain would.

`write_stub_host(folder)` writes `folder/py/npu_bridge/`, `folder/py/npu_device/` and `folder/bin/msprof`;
`host_environment(folder)` puts them first on PYTHONPATH and PATH. Each process that imports a stub
adapter appends what it saw to `folder/log.jsonl` (its environment, and per session the scope list,
switch file, profiling options and the graph's ops), and when it exits it plays the toolchain: it
fuses the graph it was given as its switches say (FuseLens's own passes stand in for the parser's
scope passes, FE's passes and AutoFuse; AMCT's work is in the graph already) and writes, where the
toolchain would, the GE dumps, fusion_result.json and a raw PROF_* folder. The stub msprof exports
that folder into `mindstudio_profiler_output/` with tests/npu_artifacts.py's writers.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_ADAPTER = '''
"""Stub {module} (FuseLens tests): records what it is given and plays the toolchain at exit."""
import atexit, json, os

import tensorflow as tf

LOG = os.environ["FUSELENS_STUB_LOG"]
SEEN = {{"sessions": []}}


def _record(event):
    with open(LOG, "a") as f:
        f.write(json.dumps(dict(event, pid=os.getpid(), module="{module}")) + "\\n")


def _session_init(original):
    def init(self, target="", graph=None, config=None):
        params = {{}}
        for optimizer in config.graph_options.rewrite_options.custom_optimizers if config else []:
            if optimizer.name == "NpuOptimizer":
                params = optimizer.parameter_map
        switch_file = params["fusion_switch_file"].s.decode() if "fusion_switch_file" in params else None
        session = {{
            "event": "session",
            "scope_passes": params["enable_scope_fusion_passes"].s.decode()
            if "enable_scope_fusion_passes" in params else "",
            "fusion_switch_file": switch_file,
            "fusion_switch_text": open(switch_file).read() if switch_file else None,
            "profiling_options": json.loads(params["profiling_options"].s) if "profiling_options" in params else None,
            "export_compile_stat": params["export_compile_stat"].i if "export_compile_stat" in params else None,
            "use_off_line": params["use_off_line"].b if "use_off_line" in params else None,
            "ops": sorted({{op.type for op in graph.get_operations()}}) if graph is not None else [],
            "graph_def": graph.as_graph_def().SerializeToString().hex() if graph is not None else "",
        }}
        SEEN["sessions"].append(session)
        _record({{k: v for k, v in session.items() if k != "graph_def"}})
        original(self, target, graph, config)
    return init


tf.compat.v1.Session.__init__ = _session_init(tf.compat.v1.Session.__init__)
_record({{"event": "adapter", "environment": {{k: os.environ.get(k) for k in (
    "AUTOFUSE_FLAGS", "AUTOFUSE_DFX_FLAGS", "DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH",
    "ASCEND_WORK_PATH", "ASCEND_PROCESS_LOG_PATH", "ASCEND_GLOBAL_LOG_LEVEL")}}}})


@atexit.register
def _toolchain():
    from tests.npu_host import play_toolchain

    for session in SEEN["sessions"]:
        play_toolchain(session)
'''

_MSPROF = '''#!{python}
"""Stub msprof (FuseLens tests): records its arguments, exports the raw PROF folder the stub adapter wrote."""
import sys
sys.path.insert(0, {root!r})
from tests.npu_host import stub_msprof
sys.exit(stub_msprof(sys.argv[1:]))
'''


def write_stub_host(folder: Path) -> Path:
    """The stub adapters and msprof under `folder`; returns the log file they append to."""
    py = folder / "py"
    (py / "npu_bridge").mkdir(parents=True, exist_ok=True)
    (py / "npu_bridge" / "__init__.py").write_text("")
    (py / "npu_bridge" / "npu_init.py").write_text(_ADAPTER.format(module="npu_bridge"))
    (py / "npu_device").mkdir(exist_ok=True)
    (py / "npu_device" / "__init__.py").write_text(
        _ADAPTER.format(module="npu_device") + "\n\nclass compat:\n    @staticmethod\n    def enable_v1():\n"
        "        _record({'event': 'enable_v1'})\n")
    (folder / "bin").mkdir(exist_ok=True)
    msprof = folder / "bin" / "msprof"
    msprof.write_text(_MSPROF.format(python=sys.executable, root=str(ROOT)))
    msprof.chmod(0o755)
    return folder / "log.jsonl"


def host_environment(folder: Path) -> dict[str, str]:
    """os.environ with the stubs first on PYTHONPATH and PATH, FuseLens importable, the log named."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(folder / "py"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PATH"] = os.pathsep.join([str(folder / "bin"), env.get("PATH", "")])
    env["FUSELENS_STUB_LOG"] = str(folder / "log.jsonl")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# ---- the toolchain the stubs play ------------------------------------------------------------------
PROF_NAME = "PROF_000001_20260101120000000_ABCDEFGHIJ"  # tests/npu_artifacts.py's write_prof_folder name


def play_toolchain(session: dict[str, Any]) -> None:
    """Fuse the session's graph as its switches say and write what GE, FE and the profiler leave."""
    from fuselens.core.graph import Graph
    from fuselens.passes.config import PassConfig
    from fuselens.passes.ledger import FE_PASS_NAMES, pipeline_ledger
    from fuselens.passes.pipeline import run_pipeline
    from tests.npu_artifacts import (
        FINAL_STAGE,
        fusion_result_text,
        ge_ops,
        npu_kernels,
        toolchain_fusions,
        write_dump_folder,
    )

    graph = Graph.from_bytes(bytes.fromhex(session["graph_def"]), source="the session's graph")
    config = PassConfig.from_ids([]).with_autofuse_flags(os.environ.get("AUTOFUSE_FLAGS", "--enable_autofuse=false"))
    if session["fusion_switch_text"]:
        config = config.with_switch_file(session["fusion_switch_file"], session["fusion_switch_text"])
    config = config.with_scope_list(session["scope_passes"], exclusive=False)
    pipeline = run_pipeline(graph, config)
    skipped = _skip_names()
    if skipped:  # AUTOFUSE_DFX_FLAGS --skip_node_names_cfg: no kernel may hold these nodes
        autofuse = pipeline.result("AutoFusePass")
        ids = [m.id for m in (autofuse.matches if autofuse else []) if skipped & set(m.nodes)]
        pipeline = run_pipeline(graph, config.with_skipped(ids))
    fusions = toolchain_fusions(pipeline)
    pid = os.getpid()
    if not os.environ.get("FUSELENS_STUB_NO_DUMPS"):  # a host whose GE writes no dumps (tests of incomplete results)
        write_dump_folder(Path(os.environ["DUMP_GRAPH_PATH"]), [("PreRunBegin", ge_ops(graph)),
                                                               (FINAL_STAGE, ge_ops(pipeline.fused, fusions))], pid=pid)
    if session["export_compile_stat"]:
        ledger = {name: (c.match_times, c.effect_times) for (_, name), c in pipeline_ledger(pipeline).passes.items()
                  if name in FE_PASS_NAMES and c.match_times}
        fe = Path(os.environ["ASCEND_WORK_PATH"]) / "FE" / str(pid)
        fe.mkdir(parents=True, exist_ok=True)
        (fe / "fusion_result.json").write_text(fusion_result_text({"0_0": ledger}))
    if os.environ.get("ASCEND_PROCESS_LOG_PATH") and int(os.environ.get("ASCEND_GLOBAL_LOG_LEVEL", "3")) <= 1:
        _write_plog(Path(os.environ["ASCEND_PROCESS_LOG_PATH"]), pid, pipeline, session["scope_passes"])
    raw = Path(session["profiling_options"]["output"]) / PROF_NAME
    raw.mkdir(parents=True, exist_ok=True)
    (raw / "stub_raw.json").write_text(json.dumps({
        "kernels": npu_kernels(pipeline.fused),
        "fusion_ops": [[name, list(f.originals)] for name, f in fusions.items()]}))


def _write_plog(root: Path, pid: int, pipeline: Any, enabled: str) -> None:
    """What the TF adapter's plog says at INFO (the lines of tests/corpus/logs): each scope pass registered,
    whether the enabled ones matched, and the time of each FE fusion pass that ran."""
    from fuselens.passes.ledger import FE_PASS_NAMES
    from fuselens.passes.registry import catalog

    prefix = f"[INFO] GE({pid},python3.7):2026-12-02-10:00:00.000.000 [{{where}}]{pid} "
    lines = []
    scope = [c for c in catalog() if c.family == "scope"]
    on = {c.id for c in scope if c.general} | {name for name in enabled.split(",") if name}
    for cls in scope:
        lines.append(prefix.format(where="scope_pass_registry.cc:38") + f"RegisterScopeFusionPass: Register pass name "
                     f"= {cls.id}, is_enable = {'true' if cls.id in on else 'false'}.")
    for cls in scope:
        if cls.id in on:
            result = pipeline.result(cls.id)
            said = "is matched." if result and result.matches else "is not matched and ignored."
            lines.append(prefix.format(where="scope_pass_manager.cc:66") + f"Run:[scope_fusion] Scope pass "
                         f"{cls.id}'s patterns {said}")
    for result in pipeline.results:
        if result.pass_id in FE_PASS_NAMES and result.matches:
            lines.append(prefix.format(where="graph_fusion.cc:512") + f"GraphFusion::RunOpsFusionPass pass_name: "
                         f"{result.pass_id} is [120] micro second.")
    folder = root / "debug" / "plog"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"plog-{pid}_20261202100000000.log").write_text("\n".join(lines) + "\n")


def _skip_names() -> set[str]:
    flags = dict(item.split("=", 1) for item in os.environ.get("AUTOFUSE_DFX_FLAGS", "").split(";") if "=" in item)
    path = flags.get("--skip_node_names_cfg")
    if not path:
        return set()
    lines = [line.strip() for line in Path(path).read_text().splitlines()]
    start = lines.index("[ByNodeName]") + 1
    return {line for line in lines[start:] if line and not line.startswith(("#", "["))}


def stub_msprof(argv: list[str]) -> int:
    """`msprof --export=on --output=PROF_DIR`: write PROF_DIR/mindstudio_profiler_output/ from the raw data."""
    from tests.npu_artifacts import write_prof_folder

    with open(os.environ["FUSELENS_STUB_LOG"], "a") as f:
        f.write(json.dumps({"event": "msprof", "argv": argv, "pid": os.getpid()}) + "\n")
    options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    prof = Path(options["output"])
    if options.get("export") != "on" or not (prof / "stub_raw.json").exists():
        print(f"msprof: nothing to export in {prof}", file=sys.stderr)
        return 1
    raw = json.loads((prof / "stub_raw.json").read_text())
    write_prof_folder(prof.parent, [tuple(k) for k in raw["kernels"]], fusion_ops=raw["fusion_ops"])
    return 0
