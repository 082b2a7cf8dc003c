"""msprof import: op_summary in three header variants (written here) gives one kernel table;
N/A cells, trailing tabs, the 4294967295 sentinel, scalar shapes, op_statistic, PROF folders,
and malformed files named by file and line."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.measure.msprof import import_graph_run, import_profile
from fuselens.core.measure.msprof.op_summary import parse_shapes, read_op_summary

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"
# (name, type, start us within the step, duration us, block dim); two steps 1000 us apart.
KERNELS = [("trans_Cast_0", "Cast", 0.0, 2.5, 1), (FUSED, "AscBackend", 3.0, 4.25, 8), ("exp_0", "Exp", 8.0, 1.5, 4)]
STEP_US = 1000.0
BASE_US = 1_700_000_000_000.0

CURRENT = ("Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),"
           "Task Duration(us),Task Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,"
           "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID,"
           "aicore_time(us),aic_total_cycles,aiv_time(us),cube_utilization(%)")
WITH_MODEL = ("Device_id,Model Name,Model ID,Infer ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,"
              "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,"
              "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID")
OLDER = ("Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time,Task Duration(us),"
         "Task Wait Time(us),Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
         "Output Data Types,Output Formats,aicore_time,total_cycles")


def _row(header: str, step: int, name: str, op: str, start: float, dur: float, block: int) -> str:
    start_us = BASE_US + step * STEP_US + start
    values = {
        "Device_id": "0", "Model Name": "ge_default", "Model ID": "4294967295", "Infer ID": str(step + 1),
        "Task ID": str(10 + step), "Stream ID": "2", "Op Name": name, "OP Type": op, "OP State": "static",
        "Task Type": "AI_VECTOR_CORE", "Task Start Time(us)": f"{start_us:.3f}\t",
        "Task Start Time": f"{int(start_us * 1000)}", "Task Duration(us)": f"{dur}", "Task Wait Time(us)": "N/A",
        "Block Dim": str(block), "Block Num": str(block), "Mix Block Dim": "0", "Mix Block Num": "N/A",
        "HF32 Eligible": "NO", "Input Shapes": '"128,192"' if op != "Cast" else '"; ; ; ;"',
        "Input Data Types": "DT_FLOAT16", "Input Formats": "ND", "Output Shapes": '"128,192"',
        "Output Data Types": "DT_FLOAT16", "Output Formats": "ND", "Context ID": "4294967295",
    }
    return ",".join(values.get(column, "N/A") for column in header.split(","))


def write_summary(path, header: str, steps: int = 2, trailing: str = "") -> None:
    lines = [header + trailing]
    lines += [_row(header, s, *k) + trailing for s in range(steps) for k in KERNELS]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def fused_graph() -> Graph:
    gd = proto.GraphDef()
    gd.node.append(make_node("Placeholder", "data1", attrs={"dtype": proto.AttrValue(type=proto.DT_HALF)}))
    call = make_node("fused_af", FUSED, ["data1"])
    call.attr["_fusion_pass"].s = b"AutoFusePass"
    call.attr["_fused_nodes"].list.s.extend([b"abs_0", b"relu_0", b"exp_0"])
    gd.node.append(call)
    return Graph(gd, source="t", validate=False)


def test_three_header_variants_import_to_the_same_kernel_table(tmp_path, fused_graph):
    runs = []
    for i, (header, trailing) in enumerate([(CURRENT, ""), (WITH_MODEL, ",\t"), (OLDER, "")]):
        write_summary(tmp_path / f"op_summary_{i}.csv", header, trailing=trailing)
        runs.append(import_graph_run(tmp_path / f"op_summary_{i}.csv", "fused", fused_graph))
    tables = [[asdict(k) for k in run.kernels] for run in runs]
    assert tables[0] == tables[1] == tables[2]
    assert [r.timeline for r in runs[1:]] == [runs[0].timeline] * 2
    assert [r.steps for r in runs] == [2, 2, 2] and runs[0].source == "msprof"
    by_kernel = {k.kernel: k for k in runs[0].kernels}
    fused = by_kernel[FUSED]
    assert (fused.node, fused.pass_id, fused.op_type, fused.count, fused.mean_us) == \
        (FUSED, "AutoFusePass", "AscBackend", 2, 4.25)
    assert by_kernel["exp_0"].node == FUSED  # named after an inner node of the fused call
    assert by_kernel["trans_Cast_0"].node is None
    assert runs[0].step_times_us == [pytest.approx(9.5)] * 2
    assert [e.start_us for e in runs[0].timeline] == [0.0, 3.0, 8.0]


def test_cells_na_sentinel_and_scalar_shapes(tmp_path):
    write_summary(tmp_path / "op_summary_0.csv", CURRENT)
    records = read_op_summary(tmp_path / "op_summary_0.csv")
    assert records[0].input_shapes == ((), (), (), (), ())  # `; ; ; ;`: five scalar inputs
    assert records[1].input_shapes == ((128, 192),) and records[1].block_dim == 8
    assert parse_shapes("1,224,224,3;64") == ((1, 224, 224, 3), (64,)) and parse_shapes("N/A") == ()
    assert parse_shapes("-1,3") == ((-1, 3),)


def test_a_row_msprof_could_not_time_is_skipped(tmp_path):
    write_summary(tmp_path / "op_summary_0.csv", CURRENT)
    text = (tmp_path / "op_summary_0.csv").read_text().splitlines()
    text[2] = text[2].replace("4.25", "4294967295")  # FUSED, step 0: invalid duration
    (tmp_path / "op_summary_0.csv").write_text("\n".join(text) + "\n")
    run = import_graph_run(tmp_path / "op_summary_0.csv")
    assert {k.kernel: k.count for k in run.kernels}[FUSED] == 1


@pytest.mark.parametrize(("old", "new", "message"), [
    ("4.25", "fast", r"line 3: column 'Task Duration\(us\)' holds 'fast', not a number"),
    (",0,NO,", ",", r"line 3: 23 cells, the header has 25"),  # one cell short is a trailing empty metric
])
def test_malformed_op_summary_names_the_file_and_line(tmp_path, old, new, message):
    path = tmp_path / "op_summary_0.csv"
    write_summary(path, CURRENT)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(old, new, 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FuseLensError, match=f"op_summary_0.csv, {message}"):
        read_op_summary(path)


def test_missing_columns_and_empty_files(tmp_path):
    (tmp_path / "op_summary_1.csv").write_text("Op Name,OP Type,Task Duration(us)\nx,Abs,1\n")
    with pytest.raises(FuseLensError, match="no 'Task Start Time\\(us\\)' or 'Task Start Time' column"):
        read_op_summary(tmp_path / "op_summary_1.csv")
    (tmp_path / "op_summary_2.csv").write_text("")
    with pytest.raises(FuseLensError, match="empty file"):
        read_op_summary(tmp_path / "op_summary_2.csv")


def test_op_statistic(tmp_path):
    path = tmp_path / "op_statistic_0_1.csv"
    path.write_text("Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),"
                    "Ratio(%)\n0,AscBackend,AI_VECTOR_CORE,100,425.0,4.0,4.25,5.5,60.1\n"
                    "0,Cast,AI_VECTOR_CORE,100,250,N/A,2.5,N/A,39.9\n")
    run = import_graph_run(path)
    assert [(t.op_type, t.count, t.total_us, t.avg_us, t.max_us) for t in run.op_types] == \
        [("AscBackend", 100, 425.0, 4.25, 5.5), ("Cast", 100, 250.0, 2.5, None)]
    assert run.kernels == [] and run.source == "msprof op_statistic"  # per-type totals, no per-kernel rows


def test_prof_folders(tmp_path, fused_graph):
    for label, header in (("original", OLDER), ("fused", CURRENT)):
        out = tmp_path / "profiling" / label / "PROF_000001_20260101_abc" / "mindstudio_profiler_output"
        out.mkdir(parents=True)
        write_summary(out / "op_summary_20260101.csv", header)
    single = import_profile(tmp_path / "profiling" / "fused" / "PROF_000001_20260101_abc")
    assert list(single.graphs) == ["imported"] and len(single.graphs["imported"].kernels) == 3
    both = import_profile(tmp_path / "profiling", {"fused": fused_graph})
    assert list(both.graphs) == ["original", "fused"] and both.speedup() == 1.0
    assert both.graphs["fused"].kernels[0].node == FUSED and both.graphs["original"].kernels[0].node is None
    (tmp_path / "empty").mkdir()
    with pytest.raises(FuseLensError, match=r"empty: no op_summary_\*\.csv or op_statistic_\*\.csv inside"):
        import_profile(tmp_path / "empty")
