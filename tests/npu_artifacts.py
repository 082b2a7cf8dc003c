"""What an Ascend NPU run leaves behind, written here from FuseLens's own graphs, since no NPU is here.

One writer for every test that needs the toolchain's files, laid out as the toolchain lays them:

* GE graph dumps: `ge_proto_<index>_[aclop_]graph_<id>_<Stage>.txt` (protobuf text of
  ge.proto.ModelDef) and `ge_onnx_<index>_...pbtxt` (text ge.onnx.ModelProto: `ge:` op types,
  tensor descriptions as sorted `input_desc_*:i` attributes, string attributes only at
  DUMP_GE_GRAPH=1, no attributes at DUMP_GE_GRAPH=3), 8- or 5-digit indexes, one counter per
  format, optionally in `pid_<pid>_deviceid_<dev>/`; inputs `op:port`, control `op:-1`.
* fusion_result.json in FE's current form (4-space indent, keys sorted, counts as strings) or the
  old form (one object per graph with `session_and_graph_id` inside, objects in a row).
* an msprof folder `PROF_*/mindstudio_profiler_output/` with op_summary (start times with a
  trailing tab), fusion_op (Original Ops joined by `;`), task_time, the bare-array msprof JSON
  (string `ts`), torch_npu's kernel_details.csv, and sliced files.

Simplified where the toolchain's choice does not matter to FuseLens: op types stay TF's (GE's
parser maps Placeholder to Data, which is done, and keeps most other names), one NetOutput node
collects the outputs, dtypes come from the nodes' `T` / `dtype` attributes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import text_format
from onnx import onnx_ml_pb2
from tensorboard.compat.proto import types_pb2

from fuselens.core.ascend.ge.dump import GE_ONNX, GE_PROTO, ge_messages
from fuselens.core.formats.tfshapes import ensure_shapes
from fuselens.core.graph import Graph, proto
from fuselens.passes.pipeline import PipelineResult
from tests.core.test_run_view import write_op_summary

STAMP = "20260101120000"  # msprof's export time stamp in file names
WEIGHT_OPS = frozenset({"Const", "Identity"})
_GE_DTYPES = {"DT_HALF": "DT_FLOAT16", "DT_BFLOAT16": "DT_BF16"}


@dataclass
class GeOp:
    """One node as GE records it, before it is written in either dump format."""

    name: str
    type: str
    inputs: list[str]  # "producer:port", "producer:-1" for control
    attrs: dict[str, Any] = field(default_factory=dict)  # str, int, float, bool, list[str], list[int], ndarray
    inputs_desc: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # (GE dtype, dims)
    outputs_desc: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)


@dataclass(frozen=True)
class Fusion:
    """What the toolchain writes on a node it made: the passes and the original nodes."""

    passes: tuple[str, ...]
    originals: tuple[str, ...]
    types: tuple[str, ...] = ()


# ---- graphs -> GE ops ------------------------------------------------------------------------
def _ge_dtype(tf_enum: int) -> str:
    name = types_pb2.DataType.Name(tf_enum)
    return _GE_DTYPES.get(name, name)


def _dtype(graph: Graph, name: str, seen: frozenset[str] = frozenset()) -> str:
    node = graph.node(name)
    for key in ("T", "dtype"):
        if key in node.attr and node.attr[key].type:
            return _ge_dtype(node.attr[key].type)
    for ref in graph.inputs(name):
        if ref.node not in seen:
            return _dtype(graph, ref.node, seen | {name})
    return "DT_FLOAT"


def _dims(graph: Graph, name: str, port: int) -> tuple[int, ...]:
    """GE dims of an output: -1 unknown dimension, [-2] unknown rank (TF infers a fused graph's shapes)."""
    shape = ensure_shapes(graph).get((name, port))
    return tuple(-1 if d is None else d for d in shape) if shape is not None else (-2,)


def ge_ops(graph: Graph, fusions: Mapping[str, Fusion] | None = None, *, weights: bool = True) -> list[GeOp]:
    """A FuseLens graph as GE ops: Placeholder -> Data, a NetOutput reading the outputs, fused nodes
    typed by their `_fused_op_type`, FuseLens's own bookkeeping attributes left out."""
    fusions = fusions or {}
    ops = []
    ports: dict[str, int] = {}
    for node in graph:
        for ref in graph.inputs(node.name):
            ports[ref.node] = max(ports.get(ref.node, 0), ref.port + 1)
    for node in graph:
        name = node.name
        op = GeOp(name, "Data" if node.op == "Placeholder" else graph.op_type(name),
                  [f"{r.node}:{r.port}" for r in graph.inputs(name)] + [f"{c}:-1" for c in graph.control_inputs(name)])
        for key in node.attr:
            if key.startswith("_") or key in ("T", "dtype", "shape"):
                continue
            value = graph.attr(name, key)
            if isinstance(value, np.ndarray):
                if weights:
                    op.attrs[key] = value
            elif isinstance(value, (str, int, float, bool)) or (isinstance(value, list) and value
                                                               and isinstance(value[0], (str, int))):
                op.attrs[key] = value
        if name in fusions:
            record = fusions[name]
            op.attrs["pass_name"] = list(record.passes)
            op.attrs["_datadump_original_op_names"] = list(record.originals)
            op.attrs["_datadump_original_op_types"] = list(record.types)
        op.inputs_desc = [(_dtype(graph, r.node), _dims(graph, r.node, r.port)) for r in graph.inputs(name)]
        op.outputs_desc = [(_dtype(graph, name), _dims(graph, name, p)) for p in range(max(ports.get(name, 0), 1))]
        ops.append(op)
    outputs = graph.outputs()
    ops.append(GeOp("NetOutput", "NetOutput", [f"{o}:0" for o in outputs],
                    inputs_desc=[(_dtype(graph, o), _dims(graph, o, 0)) for o in outputs]))
    return ops


def toolchain_fusions(pipeline: PipelineResult, names: Mapping[str, str] | None = None) -> dict[str, Fusion]:
    """The fusions of a FuseLens pipeline as the toolchain records them: every new or rewritten node
    with its pass (renamed by `names`, e.g. AutoFusePass -> its GE name) and its original compute
    nodes (weights left out, as GE lists only ops)."""
    names = names or {}
    original, provenance = pipeline.original, pipeline.provenance
    order = original.topological_index()
    found = {}
    for node in pipeline.fused:
        rewrite = provenance.rewrite_of(node.name) if provenance else None
        if rewrite is None or node.op == "Const":
            continue
        originals = sorted((o for o in provenance.origins(node.name)
                            if o in original and original.op(o) not in WEIGHT_OPS), key=order.__getitem__)
        if originals:
            found[node.name] = Fusion((names.get(rewrite.pass_id, rewrite.pass_id),), tuple(originals),
                                      tuple(original.op_type(o) for o in originals))
    return found


# ---- GE ops -> dump text ---------------------------------------------------------------------
def _set_ge_attr(target: Any, value: Any) -> None:
    list_type = type(target.list).ListValueType
    if isinstance(value, np.ndarray):
        target.t.desc.dtype = type(target.t.desc).DESCRIPTOR.fields_by_name["dtype"].enum_type.values_by_name[
            _ge_dtype(proto.tf_dtype(value.dtype))].number
        target.t.desc.shape.dim.extend(value.shape)
        target.t.desc.layout = "ND"
        target.t.data = np.ascontiguousarray(value).tobytes()
    elif isinstance(value, bool):
        target.b = value
    elif isinstance(value, int):
        target.i = value
    elif isinstance(value, float):
        target.f = value
    elif isinstance(value, str):
        target.s = value.encode()
    elif value and isinstance(value[0], str):
        target.list.s.extend(v.encode() for v in value)
        target.list.val_type = list_type.Value("VT_LIST_STRING")
    else:
        target.list.i.extend(value)
        target.list.val_type = list_type.Value("VT_LIST_INT")


def ge_proto_text(ops: Sequence[GeOp], graph_name: str = "ge_default", *, level: int = 2) -> str:
    """ge.proto.ModelDef text, as GraphUtils::DumpGEGraph writes it (Const weights dropped below level 1)."""
    messages = ge_messages()
    model = messages["ModelDef"]()
    graph = model.graph.add(name=graph_name)
    dtype_enum = messages["TensorDescriptor"].DESCRIPTOR.fields_by_name["dtype"].enum_type
    for i, op in enumerate(ops):
        out = graph.op.add(name=op.name, type=op.type, id=i)
        out.input.extend(op.inputs)
        if op.type == "Data":
            graph.input.append(f"{op.name}:0")
        for key, value in op.attrs.items():
            if isinstance(value, np.ndarray) and level != 1:
                continue
            _set_ge_attr(out.attr[key], value)
        for descs, target in ((op.inputs_desc, out.input_desc), (op.outputs_desc, out.output_desc)):
            for dtype, dims in descs:
                desc = target.add(dtype=dtype_enum.values_by_name[dtype].number, layout="ND")
                desc.shape.dim.extend(dims)
    return text_format.MessageToString(model)


def ge_onnx_text(ops: Sequence[GeOp], graph_name: str = "ge_default", *, level: int = 2) -> str:
    """ge.onnx.ModelProto text, as OnnxUtils writes it: attributes sorted by name, strings only at level 1."""
    model = onnx_ml_pb2.ModelProto(ir_version=6, producer_name="GE")
    model.graph.name = graph_name
    kinds = onnx_ml_pb2.AttributeProto
    for i, op in enumerate(ops):
        node = model.graph.node.add(name=op.name, op_type=f"ge:{op.type}")
        node.input.extend(op.inputs)
        if level == 3:
            continue
        attrs: list[onnx_ml_pb2.AttributeProto] = [kinds(name="id", type=kinds.INT, i=i),
                                                    kinds(name="stream_id", type=kinds.INT, i=0)]
        for direction, descs in (("input", op.inputs_desc), ("output", op.outputs_desc)):
            attrs.append(kinds(name=f"{direction}_desc_nums", type=kinds.INT, i=len(descs)))
            for k, (dtype, dims) in enumerate(descs):
                attrs += [kinds(name=f"{direction}_desc_dtype:{k}", type=kinds.STRING, s=dtype.encode()),
                          kinds(name=f"{direction}_desc_shape:{k}", type=kinds.INTS, ints=list(dims)),
                          kinds(name=f"{direction}_desc_layout:{k}", type=kinds.STRING, s=b"ND")]
        for key, value in op.attrs.items():
            if isinstance(value, np.ndarray):  # a weight: its description, and its bytes at level 1 only
                attrs += [kinds(name=f"{key}_desc_dtype", type=kinds.STRING,
                                s=_ge_dtype(proto.tf_dtype(value.dtype)).encode()),
                          kinds(name=f"{key}_desc_shape", type=kinds.INTS, ints=list(value.shape)),
                          kinds(name=f"{key}_desc_layout", type=kinds.STRING, s=b"ND")]
                if level == 1:
                    attrs.append(kinds(name=f"{key}_data", type=kinds.STRING, s=value.tobytes()))
                continue
            if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], str)):
                if level != 1:
                    continue
                attrs.append(kinds(name=key, type=kinds.STRING, s=value.encode()) if isinstance(value, str)
                             else kinds(name=key, type=kinds.STRINGS, strings=[v.encode() for v in value]))
            elif isinstance(value, float):
                attrs.append(kinds(name=key, type=kinds.FLOAT, f=value))
            elif isinstance(value, (bool, int)):
                attrs.append(kinds(name=key, type=kinds.INT, i=int(value)))
            else:
                attrs.append(kinds(name=key, type=kinds.INTS, ints=list(value)))
        node.attribute.extend(sorted(attrs, key=lambda a: a.name))
    return text_format.MessageToString(model)


def dump_name(fmt: str, index: int, graph_id: int | None, stage: str, *, width: int = 8, aclop: bool = False) -> str:
    """A dump file's name as GE writes it (graph_id None: the oldest onnx form, 5 digits, no graph id)."""
    suffix = ".txt" if fmt == GE_PROTO else ".pbtxt"
    if graph_id is None:
        return f"ge_onnx_{index:05d}_{stage}.pbtxt"
    return f"{fmt}_{index:0{width}d}_{'aclop_' if aclop else ''}graph_{graph_id}_{stage}{suffix}"


def write_dump_folder(root: Path, stages: Iterable[tuple[str, Sequence[GeOp]]], *, graph_id: int | None = 0,
                      formats: Sequence[str] = (GE_PROTO, GE_ONNX), width: int = 8, first_index: int = 0,
                      pid: int | None = None, device: int = 0, aclop: bool = False, level: int = 2) -> list[Path]:
    """Write stages in order (one counter per format), into `root/pid_<pid>_deviceid_<device>/` when a pid is
    given, as DUMP_GRAPH_PATH makes GE do. Returns the files written."""
    folder = root / f"pid_{pid}_deviceid_{device}" if pid is not None else root
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for offset, (stage, ops) in enumerate(stages):
        for fmt in formats:
            if graph_id is None and fmt != GE_ONNX:
                continue
            path = folder / dump_name(fmt, first_index + offset, graph_id, stage, width=width, aclop=aclop)
            writer = ge_proto_text if fmt == GE_PROTO else ge_onnx_text
            path.write_text(writer(ops, level=level))
            written.append(path)
    return written


# ---- fusion_result.json ---------------------------------------------------------------------
def fusion_result_text(graphs: Mapping[str, Mapping[str, tuple[int, int]]], *, ub: Mapping[str, Mapping[str, tuple[
        int, int, int]]] | None = None, form: str = "current") -> str:
    """`graphs`: "0_0" -> pass -> (match_times, effect_times); `ub` likewise with repository_hit_times."""
    ub = ub or {}
    entries = {}
    for graph in dict.fromkeys([*graphs, *ub]):
        entry: dict[str, Any] = {}
        if graphs.get(graph):
            entry["graph_fusion"] = {p: {"effect_times": str(e), "match_times": str(m)}
                                     for p, (m, e) in graphs[graph].items()}
        if ub.get(graph):
            entry["ub_fusion"] = {p: {"effect_times": str(e), "match_times": str(m), "repository_hit_times": str(h)}
                                  for p, (m, e, h) in ub[graph].items()}
        entries[graph] = entry
    if form == "current":
        return json.dumps({f"session_and_graph_id_{g}": e for g, e in entries.items()}, indent=4, sort_keys=True)
    return "\n".join(json.dumps({"session_and_graph_id": g, **e}, indent=4, sort_keys=True) for g, e in entries.items())


# ---- msprof ----------------------------------------------------------------------------------
def schedule(kernels: Sequence[tuple[str, str, float]], steps: int) -> list[tuple[int, str, str, float, float]]:
    """(step, name, type, start us, duration us) in the timing `write_op_summary` uses."""
    rows = []
    for step in range(steps):
        start = 1_700_000_000_000.0 + 1000.0 * step
        for name, op, dur in kernels:
            rows.append((step, name, op, start, dur))
            start += dur + 1.0
    return rows


def write_prof_folder(root: Path, kernels: Sequence[tuple[str, str, float]], *, steps: int = 3,
                      fusion_ops: Sequence[tuple[str, Sequence[str]]] = (), op_summary: bool = True,
                      task_time: bool = True, msprof_json: bool = True, kernel_details: bool = False,
                      slices: int = 1) -> Path:
    """`root/PROF_000001_.../mindstudio_profiler_output/` with the files asked for; returns the PROF folder."""
    prof = root / "PROF_000001_20260101120000000_ABCDEFGHIJ"
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True, exist_ok=True)
    rows = schedule(kernels, steps)
    if op_summary:
        per = -(-steps // slices)
        for part in range(slices):
            name = f"op_summary_{STAMP}.csv" if part == 0 else f"op_summary_slice_{part}_{STAMP}.csv"
            write_op_summary(out / name, list(kernels), steps=min(per, steps - part * per))
    if fusion_ops:
        lines = ["Device_id,Model Name,Model ID,Fusion Op,Original Ops,Memory Input(KB),Memory Output(KB),"
                 "Memory Weight(KB),Memory Workspace(KB),Memory Total(KB)"]
        lines += [f'host,ge_default,1,{op},"{";".join(originals)}",48.0,48.0,0,0,96.0' for op, originals in fusion_ops]
        (out / f"fusion_op_{STAMP}.csv").write_text("\n".join(lines) + "\n")
    if task_time:
        lines = ["Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)"]
        lines += [f"0,{name},AI_VECTOR_CORE,2,{i},{dur},{start:.3f}\t,{start + dur:.3f}\t"
                  for i, (_, name, _, start, dur) in enumerate(rows)]
        (out / f"task_time_{STAMP}.csv").write_text("\n".join(lines) + "\n")
    if msprof_json:
        meta = [{"name": "process_name", "pid": 1000, "tid": 0, "ph": "M", "args": {"name": "CANN"}},
                {"name": "process_name", "pid": 2000, "tid": 0, "ph": "M", "args": {"name": "Ascend Hardware"}},
                {"name": "thread_name", "pid": 2000, "tid": 2, "ph": "M", "args": {"name": "Stream 2"}}]
        tasks = [{"name": name, "pid": 2000, "tid": 2, "ts": f"{start:.3f}", "dur": dur, "ph": "X",
                  "args": {"Model Id": 1, "Task Type": "AI_VECTOR_CORE", "Physic Stream Id": 2, "Task Id": i}}
                 for i, (_, name, _, start, dur) in enumerate(rows)]
        api = [{"name": f"launch {name}", "pid": 1000, "tid": 7, "ts": f"{start - 5:.3f}", "dur": 2.0, "ph": "X",
                "args": {}} for _, name, _, start, _ in rows]
        events = meta + tasks + api
        per = -(-len(events) // slices)
        for part in range(slices):
            name = f"msprof_{STAMP}.json" if slices == 1 else f"msprof_slice_{part}_{STAMP}.json"
            (out / name).write_text(json.dumps(events[part * per:(part + 1) * per]))
    if kernel_details:
        lines = ["Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,"
                 "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats"]
        lines += [f'{step},{name},{op},AI_VECTOR_CORE,{start:.3f}\t,{dur},0,8,"128,192",DT_FLOAT16,ND,"128,192",'
                  "DT_FLOAT16,ND" for step, name, op, start, dur in rows]
        (prof / "kernel_details.csv").write_text("\n".join(lines) + "\n")
    return prof


def npu_kernels(graph: Graph, dur: float = 10.0) -> list[tuple[str, str, float]]:
    """One kernel per compute node of `graph` (what an NPU profile of that graph lists), named after it."""
    skip = {"Placeholder", "Const", "Identity", "NoOp"}
    return [(node.name, graph.op_type(node.name), dur) for node in graph if node.op not in skip]


# ---- a whole NPU run -------------------------------------------------------------------------
GE_ONLY_PASS = "TransdataCastFusionPass"  # a GE pass FuseLens does not model, in every toolchain ledger here
FINAL_STAGE = "PreRunAfterAfterPrecisionRefine"


def write_npu_run(root: Path, pipeline: PipelineResult, *, toolchain_fuses: bool = True,
                  ledger: Mapping[str, tuple[int, int]] | None = None, stage: str = FINAL_STAGE,
                  pid: int = 4242) -> Path:
    """What comes back from running `pipeline`'s model on the NPU: GE dumps (PreRunBegin and `stage`),
    fusion_result.json and a PROF folder. With `toolchain_fuses` the toolchain did what FuseLens predicts
    (its final graph is FuseLens's fused graph, with GE's provenance attributes); without, it fused
    nothing. `ledger` gives the toolchain's counts (match, effect) per pass; by default FuseLens's own
    counts for the GE-named passes plus one GE pass FuseLens does not model."""
    from fuselens.passes.ledger import FE_PASS_NAMES, pipeline_ledger

    final, fusions = (pipeline.fused, toolchain_fusions(pipeline)) if toolchain_fuses else (pipeline.original, {})
    write_dump_folder(root / "dumps", [("PreRunBegin", ge_ops(pipeline.original)), (stage, ge_ops(final, fusions))],
                      pid=pid)
    if ledger is None:
        mine = pipeline_ledger(pipeline)
        ledger = {name: (c.match_times, c.effect_times) for (_, name), c in mine.passes.items()
                  if name in FE_PASS_NAMES and c.match_times}
        ledger = {**ledger, GE_ONLY_PASS: (2, 2)}
    (root / "fusion_result.json").write_text(fusion_result_text({"0_0": ledger, "0_1": {GE_ONLY_PASS: (1, 1)}}))
    write_prof_folder(root, npu_kernels(final), fusion_ops=[(name, f.originals) for name, f in fusions.items()])
    return root
