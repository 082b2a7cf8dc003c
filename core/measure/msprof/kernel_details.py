"""torch_npu's kernel_details.csv: op_summary's task rows under torch_npu's column names.

`Name, Type, Accelerator Core, Start Time(us), Duration(us), Wait Time(us)` (7-8 columns at
profiler level 0, with or without `Step Id`), later versions adding `OP State`, `HF32 Eligible`
and `Device_id` after `Step Id`, then the op_summary-like shape and metric columns.
"""

from __future__ import annotations

import os

from fuselens.core.measure.msprof.op_summary import OpRecord, read_task_rows
from fuselens.core.measure.profile_csv import has_columns, header_of

KIND = "kernel_details"
# torch_npu's names -> op_summary's (the row reader's).
COLUMNS = {"Name": "Op Name", "Type": "OP Type", "Accelerator Core": "Task Type", "Wait Time(us)": "Task Wait Time(us)"}


def recognises(head: bytes) -> bool:
    """A CSV header with `Name`, `Type`, `Start Time(us)` and `Duration(us)` (and no `Op Name`)."""
    header = header_of(head) or ()
    return "Op Name" not in header and has_columns(header, ("Name",), ("Type",), ("Start Time(us)",),
                                                   ("Duration(us)",))


def read_kernel_details(path: str | os.PathLike[str]) -> list[OpRecord]:
    """The timed rows of one kernel_details CSV."""
    return read_task_rows(path, COLUMNS)
