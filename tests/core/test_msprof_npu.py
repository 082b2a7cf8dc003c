"""The rest of an msprof export: fusion_op (fused op -> original ops), task_time, the bare-array msprof
JSON timeline, torch_npu's kernel_details.csv, sliced files; each gives the same kernel table, and a
folder's timings come from the richest file present."""

from __future__ import annotations

import json

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.measure.msprof import find_profile_files, import_graph_run
from fuselens.core.measure.msprof.fusion_op import read_fusion_op
from fuselens.core.measure.msprof.task_time import read_task_time
from fuselens.core.measure.msprof.timeline import read_timeline
from tests.npu_artifacts import write_prof_folder

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"
KERNELS = [("trans_Cast_0", "Cast", 2.5), (FUSED, "AscBackend", 4.25)]


def table(run):
    return sorted((k.kernel, k.count, k.mean_us) for k in run.kernels)


@pytest.mark.parametrize("only", ["task_time", "msprof_json", "kernel_details"])
def test_every_timing_file_gives_the_op_summary_kernel_table(tmp_path, only):
    reference = import_graph_run(write_prof_folder(tmp_path / "ref", KERNELS, task_time=False, msprof_json=False))
    prof = write_prof_folder(tmp_path / only, KERNELS, op_summary=False, task_time=only == "task_time",
                             msprof_json=only == "msprof_json", kernel_details=only == "kernel_details")
    run = import_graph_run(prof)
    assert table(run) == table(reference) == [(FUSED, 3, 4.25), ("trans_Cast_0", 3, 2.5)]
    assert run.steps == 3 and [e.kernel for e in run.timeline] == ["trans_Cast_0", FUSED]
    assert run.step_times_us == reference.step_times_us


def test_op_summary_wins_and_sliced_files_are_read_together(tmp_path):
    prof = write_prof_folder(tmp_path, KERNELS, steps=4, slices=2)
    found = find_profile_files(prof)
    assert [p.name for p in found["op_summary"]] == ["op_summary_20260101120000.csv",
                                                     "op_summary_slice_1_20260101120000.csv"]
    assert len(found["timeline"]) == 2
    assert table(import_graph_run(prof)) == [(FUSED, 4, 4.25), ("trans_Cast_0", 4, 2.5)]
    tasks = read_timeline(found["timeline"])
    assert len(tasks) == 8 and tasks[0].task_type == "AI_VECTOR_CORE"  # CANN API events are not device tasks


def test_task_time_start_times_carry_a_trailing_tab(tmp_path):
    prof = write_prof_folder(tmp_path, KERNELS, op_summary=False, msprof_json=False)
    path = find_profile_files(prof)["task_time"][0]
    assert "\t," in path.read_text()
    first = read_task_time(path)[0]
    assert (first.name, first.task_type, first.start_us, first.dur_us) == \
        ("trans_Cast_0", "AI_VECTOR_CORE", 1_700_000_000_000.0, 2.5)


def test_fusion_op_maps_fused_ops_to_original_ops(tmp_path):
    prof = write_prof_folder(tmp_path, KERNELS, fusion_ops=[(FUSED, ["abs_0", "relu_0", "exp_0"])])
    path = find_profile_files(prof)["fusion_op"][0]
    [row] = read_fusion_op(path)
    assert (row.fusion_op, row.original_ops, row.memory_total_kb, row.model) == \
        (FUSED, ("abs_0", "relu_0", "exp_0"), 96.0, "ge_default")
    with pytest.raises(FuseLensError, match="fusion_op lists fused ops and their original ops, not timings"):
        import_graph_run(path)


def test_malformed_timeline_and_task_time_name_the_file(tmp_path):
    bad = tmp_path / "msprof_1.json"
    bad.write_text('[{"name": "x",')
    with pytest.raises(FuseLensError, match=r"msprof_1.json, line 1: not valid JSON"):
        read_timeline([bad])
    bad.write_text(json.dumps({"not": "a trace"}))
    with pytest.raises(FuseLensError, match=r"msprof_1\.json: not an msprof timeline"):
        read_timeline([bad])
    bad = tmp_path / "task_time_1.csv"
    bad.write_text("Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
                   "0,k,AI_CORE,1,1,slow,1.0\t,2.0\t\n")
    with pytest.raises(FuseLensError, match=r"task_time_1.csv, line 2: column 'task_time\(us\)' holds 'slow'"):
        read_task_time(bad)
