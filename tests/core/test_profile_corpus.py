"""The profile corpus (tests/corpus/profiles/, written from what real msprof and torch_npu runs left
behind): every column scheme and cell quirk reads to the expected kernels or per-type totals, under the
toolchain's name and under any other; folders open as one run (the dispatcher: test_sniff.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fuselens.core.ascend import sniff
from fuselens.core.ascend.profile_import import import_run_file
from fuselens.core.errors import FuseLensError
from fuselens.core.measure.msprof import find_profile_files, import_graph_run
from fuselens.core.measure.msprof.fusion_op import read_fusion_op
from fuselens.core.measure.msprof.kernel_details import read_kernel_details
from fuselens.core.measure.msprof.op_summary import read_op_summary
from fuselens.core.measure.msprof.task_time import read_task_time
from fuselens.core.measure.msprof.timeline import read_timeline
from fuselens.core.measure.profile_csv import clean, header_of, number
from fuselens.core.measure.result import GraphRun, RunResult

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "profiles"
MATMUL, GELU = "aclnnMatmul_MatMulCommon_MatMulV2", "aclnnGelu_GeluAiCore_Gelu"
FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"
MSPROF_KERNELS = [("conv_0", 2, 20.0), (FUSED, 2, 8.5), ("trans_TransData_0", 2, 5.0)]
TORCH_KERNELS = [(MATMUL, 2, 41.0), (GELU, 2, 6.5)]
# file -> (kind, steps, [(kernel, count, total us)] largest first)
TIMED = {
    "op_summary_20250109120000.csv": ("op_summary", 2, MSPROF_KERNELS),
    "op_summary_0_1_20260101000000.csv": ("op_summary", 3, [("MatMulV3", 3, 36.375),
                                                            ("autofuse_reduce_1_Add_ReduceMean", 3, 10.5)]),
    "op_summary_2023.csv": ("op_summary", 2, [("aclnnMul_MulAiCore_Mul", 2, 4.0), ("aclnnAdd_AddAiCore_Add", 2, 3.5)]),
    "kernel_details.csv": ("kernel_details", 2, TORCH_KERNELS),
    "kernel_details_level0.csv": ("kernel_details", 2, TORCH_KERNELS),
    "kernel_details_20250109.csv": ("kernel_details", 2, TORCH_KERNELS),
    "task_time_20250109120000.csv": ("task_time", 2, MSPROF_KERNELS),
    "msprof_20250109120000.json": ("timeline", 2, [("te_matmulv2_3b1f5c0e9a7d2c44b1e0f7a1d9c3e5b2_1", 2, 24.5),
                                                   ("_Z11mmad_customPhS_S_S_", 2, 15.0)]),
    "trace_view.json": ("timeline", 2, [(MATMUL + "_1f9a0c", 2, 41.0), (GELU + "_7c2d11", 2, 6.5)]),
}
# file -> [(op type, core type, count, total us, avg us, ratio %)]
STATISTICS = {
    "op_statistic_0_1_20250109120000.csv": [("Conv2D", "AI_CORE", 2, 20.0, 10.0, 59.259),
                                            ("AscBackend", "AI_VECTOR_CORE", 2, 8.5, 4.25, 25.185),
                                            ("TransData", "AI_VECTOR_CORE", 2, 5.0, 2.5, 14.815),
                                            ("Cast", "AI_VECTOR_CORE", 1, 0.25, 0.25, 0.741)],
    "op_statistic.csv": [("MatMulV2", "AI_CORE", 2, 41.0, 20.5, 86.316),
                         ("Gelu", "AI_VECTOR_CORE", 2, 6.5, 3.25, 13.684)],
}


def kernels(run: GraphRun) -> list[tuple[str, int, float]]:
    return [(k.kernel, k.count, k.total_us) for k in run.kernels]


def totals(run: GraphRun) -> list[tuple]:
    return [(t.op_type, t.core_type, t.count, t.total_us, t.avg_us, t.ratio_pct) for t in run.op_types]


def renamed(tmp_path: Path, name: str, new: str) -> Path:
    target = tmp_path / new
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CORPUS / name, target)
    return target


def test_the_corpus_is_all_here():
    assert {p.name for p in CORPUS.iterdir()} == {*TIMED, *STATISTICS, "fusion_op_20250109120000.csv"}


@pytest.mark.parametrize("name", list(TIMED))
@pytest.mark.parametrize("as_named", [True, False], ids=["toolchain name", "renamed"])
def test_every_timing_scheme_reads_to_its_kernels_under_any_name(tmp_path, name, as_named):
    kind, steps, expected = TIMED[name]
    path = CORPUS / name if as_named else renamed(tmp_path, name, "exported from the cluster.dat")
    assert sniff.sniff(path) == kind
    run = import_graph_run(path)
    assert kernels(run) == expected and run.steps == steps and run.op_types == []
    assert len(run.timeline) == len(expected)  # the last step's kernels
    assert list(import_run_file(path).graphs) == ["fused"]  # the window's and the CLI's way in


@pytest.mark.parametrize("name", list(STATISTICS))
@pytest.mark.parametrize("as_named", [True, False], ids=["toolchain name", "renamed"])
def test_op_statistic_reads_to_per_type_totals_under_any_name(tmp_path, name, as_named):
    path = CORPUS / name if as_named else renamed(tmp_path, name, "op_summary_0_1.csv")  # a misleading name
    assert sniff.sniff(path) == "op_statistic"
    run = import_run_file(path).graphs["fused"]
    assert totals(run) == STATISTICS[name]
    assert run.kernels == [] and run.timeline == [] and run.source == "msprof op_statistic"
    assert RunResult.from_json(import_run_file(path).to_json()).graphs["fused"].op_types == run.op_types


def test_cell_quirks_of_op_summary():
    """Trailing TAB in the quoted start, triple-quoted and scalar shapes, an HCCL row msprof could not time,
    a row one cell short, `10` beside `10.0`."""
    records = read_op_summary(CORPUS / "op_summary_20250109120000.csv")
    assert [r.name for r in records].count("hcom_allReduce__491_0_1") == 0  # all N/A: untimed, left out
    first, conv, fused = records[:3]
    assert first.start_us == pytest.approx(1736413971558972.912) and first.block_dim == 8
    assert first.input_shapes == ((32, 1024),) and conv.input_shapes == ((32, 3, 224, 224), (64, 3, 7, 7))
    assert fused.input_shapes == ((), (), (), (), ())  # `; ; ; ;`: five scalars
    short = records[4]  # the second conv row, one cell short of the header
    assert (short.name, short.dur_us, short.line) == ("conv_0", 10.0, 7)
    newer = read_op_summary(CORPUS / "op_summary_0_1_20260101000000.csv")
    assert [r.infer_id for r in newer] == [1, 1, 2, 2, 3, 3] and newer[1].block_dim == 8  # Block Num
    mixed = read_op_summary(CORPUS / "op_summary_2023.csv")
    assert [r.infer_id for r in mixed] == [0, 0, 1, 1] and mixed[0].start_us == 1690000000000000.0  # Step Id


def test_kernel_details_with_a_call_stack_over_two_lines_and_a_short_row():
    records = read_kernel_details(CORPUS / "kernel_details_20250109.csv")
    assert [(r.line, r.name, r.task_type) for r in records] == [
        (2, MATMUL, "AI_CORE"), (4, GELU, "AI_VECTOR_CORE"), (5, MATMUL, "AI_CORE"), (7, GELU, "AI_VECTOR_CORE")]
    assert records[0].input_shapes == ((32, 1024), (1024, 1024)) and records[0].infer_id == 1


def test_task_time_leaves_out_the_runtimes_own_tasks():
    records = read_task_time(CORPUS / "task_time_20250109120000.csv")
    assert {r.task_type for r in records} == {"AI_CORE", "AI_VECTOR_CORE"} and len(records) == 6


def test_timelines_keep_mangled_and_hashed_names_and_only_device_kernels():
    tasks = read_timeline([CORPUS / "msprof_20250109120000.json"])
    assert [t.name for t in tasks[:2]] == ["_Z11mmad_customPhS_S_S_", "te_matmulv2_3b1f5c0e9a7d2c44b1e0f7a1d9c3e5b2_1"]
    assert len(tasks) == 4 and tasks[0].start_us == pytest.approx(1736413971558972.912)  # EVENT_WAIT left out


def test_a_timeline_without_device_kernels_is_refused(tmp_path):
    from fuselens.core.runtime.trace import write_chrome_trace

    path = tmp_path / "trace.json"  # FuseLens's own Chrome trace of a run: TF kernels, no Ascend device
    write_chrome_trace(import_run_file(CORPUS / "op_summary_2023.csv"), path)
    assert sniff.sniff(path) == "timeline"
    with pytest.raises(FuseLensError, match=r'trace.json: a trace-event timeline with no device kernels'):
        import_run_file(path)


def test_fusion_op_is_a_map_not_a_timing(tmp_path):
    path = renamed(tmp_path, "fusion_op_20250109120000.csv", "ops.csv")
    assert sniff.sniff(path) == "fusion_op"
    assert [(r.fusion_op, r.original_ops, r.memory_total_kb) for r in read_fusion_op(path)] == [
        (FUSED, ("abs_0", "relu_0", "exp_0"), 1568.0), ("conv_0", ("conv_0", "bn_0"), 3938.375)]
    with pytest.raises(FuseLensError, match="fusion_op lists fused ops and their original ops, not timings"):
        import_run_file(path)


def test_a_prof_folder_opens_as_one_run_whatever_its_files_are_called(tmp_path):
    out = tmp_path / "PROF_000001_20250109120000000_ABCDEFGHIJ" / "mindstudio_profiler_output"
    for name, new in [("op_summary_20250109120000.csv", "a.csv"), ("task_time_20250109120000.csv", "b.csv"),
                      ("msprof_20250109120000.json", "c.json"), ("op_statistic_0_1_20250109120000.csv", "d.csv"),
                      ("fusion_op_20250109120000.csv", "e.csv")]:
        renamed(out, name, new)
    found = find_profile_files(tmp_path)
    assert {kind: [p.name for p in paths] for kind, paths in found.items() if paths} == {
        "op_summary": ["a.csv"], "task_time": ["b.csv"], "timeline": ["c.json"], "op_statistic": ["d.csv"],
        "fusion_op": ["e.csv"]}
    for folder in (tmp_path, out.parent, out):
        assert kernels(import_graph_run(folder)) == MSPROF_KERNELS  # op_summary first


def test_a_torch_npu_folder_opens_as_one_run(tmp_path):
    out = tmp_path / "rank0_1234_20250109120000_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    for name in ("kernel_details.csv", "op_statistic.csv", "trace_view.json"):
        renamed(out, name, name)
    assert kernels(import_graph_run(out)) == TORCH_KERNELS  # kernel_details, not also the timeline
    (out / "kernel_details.csv").unlink()
    assert kernels(import_graph_run(out.parent)) == TIMED["trace_view.json"][2]
    (out / "trace_view.json").unlink()
    assert totals(import_graph_run(out.parent)) == STATISTICS["op_statistic.csv"]
    # torch_npu also leaves msprof's own export beside it: op_summary wins, read once
    renamed(out.parent / "PROF_000001_20250109120000000_ABCDEFGHIJ" / "mindstudio_profiler_output",
            "op_summary_20250109120000.csv", "op_summary_20250109120000.csv")
    assert kernels(import_graph_run(out.parent)) == MSPROF_KERNELS


def test_the_csv_layer():
    assert clean('"1736413971558972.912\t"') == "1736413971558972.912" and clean('"32,1024"') == "32,1024"
    assert clean(" N/A ") is None and clean("") is None
    assert number("4294967295", "f", "c") is None and number("12", "f", "c") == 12.0 == number("12.000\t", "f", "c")
    with pytest.raises(FuseLensError, match="f: column 'c' holds 'nan', not a finite number"):
        number("nan", "f", "c")
    assert header_of(b"\xef\xbb\xbfOp Name,OP Type,\n") == ("Op Name", "OP Type")
    assert header_of(b"one column\n") is None and header_of(b"\xff\xfe\x00") is None
