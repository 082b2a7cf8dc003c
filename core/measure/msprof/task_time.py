"""msprof's task_time: every task the device ran (kernels and the scheduler's own tasks), no op types.

`Device_id, kernel_name, kernel_type, stream_id, task_id, task_time(us), task_start(us),
task_stop(us)`; task types such as PROFILING_ENABLE or PLACE_HOLDER_SQE are the runtime's
bookkeeping, not kernels, and are left out.
"""

from __future__ import annotations

import os

from fuselens.core.measure.msprof.op_summary import OpRecord
from fuselens.core.measure.profile_csv import has_columns, header_of, read_table

KIND = "task_time"
REQUIRED = ("kernel_name", "kernel_type", "task_time(us)", "task_start(us)")
# Device tasks that are not kernels (the runtime's and the profiler's own), as task_time and the
# timeline's "Task Type" name them.
NON_KERNEL_TASKS = frozenset({
    "PROFILING_ENABLE", "PROFILING_DISABLE", "PLACE_HOLDER_SQE", "PLACE_HOLDER", "EVENT_RECORD", "EVENT_WAIT",
    "EVENT_RESET", "NOTIFY_RECORD", "NOTIFY_WAIT", "STREAM_SWITCH", "STREAM_ACTIVE", "LABEL_SET", "LABEL_SWITCH",
    "LABEL_GOTO", "MODEL_MAINTAINCE", "MODEL_EXECUTE", "MODEL_END_GRAPH", "END_GRAPH", "MEMCPY_ASYNC_WITHOUT_SDMA",
    "WRITE_VALUE", "CAPTURE_RECORD", "CAPTURE_WAIT", "FLIP",
})


def recognises(head: bytes) -> bool:
    """A CSV header with `kernel_name`, `kernel_type`, `task_time(us)` and `task_start(us)`."""
    return has_columns(header_of(head), *((c,) for c in REQUIRED))


def is_kernel(task_type: str) -> bool:
    return task_type.upper() not in NON_KERNEL_TASKS


def read_task_time(path: str | os.PathLike[str]) -> list[OpRecord]:
    """task_time's kernel rows (name, task type, start, duration) as records; it names no op type."""
    table = read_table(path, required=REQUIRED)
    records = []
    for row in table.rows:
        name, task_type = row.text("kernel_name"), row.text("kernel_type") or ""
        start, duration = row.number("task_start(us)"), row.number("task_time(us)")
        if name is None or start is None or duration is None or not is_kernel(task_type):
            continue
        records.append(OpRecord(line=row.line, name=name, op_type="", task_type=task_type,
                                device=f"npu:{row.text('Device_id') or 0}", start_us=start, dur_us=duration,
                                block_dim=None, input_shapes=(), infer_id=None))
    return records
