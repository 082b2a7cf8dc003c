"""msprof's (and torch_npu's) op_statistic: time per op type, not per kernel.

`Device_id, OP Type, Core Type, Count, Total Time(us), Min Time(us), Avg Time(us), Max Time(us),
Ratio(%)` (torch_npu's op_statistic.csv may leave out `Device_id`). It has no `Op Name` column and
no timeline, so a run read from it holds per-type totals (GraphRun.op_types) and no kernels.
"""

from __future__ import annotations

import os

from fuselens.core.errors import FuseLensError
from fuselens.core.measure.profile_csv import has_columns, header_of, read_table
from fuselens.core.measure.result import GraphRun, OpTypeStat

KIND = "op_statistic"
REQUIRED = ("OP Type", "Count", "Total Time(us)")
SOURCE = "msprof op_statistic"


def recognises(head: bytes) -> bool:
    """A CSV header with `OP Type`, `Count` and `Total Time(us)` and no per-kernel `Op Name`."""
    header = header_of(head) or ()
    return "Op Name" not in header and has_columns(header, *((c,) for c in REQUIRED))


def read_op_statistic(path: str | os.PathLike[str], label: str = "imported") -> GraphRun:
    """op_statistic rows (one per op type and core type) as a run's per-type totals, largest first."""
    table = read_table(path, required=REQUIRED)
    totals = []
    for row in table.rows:
        count, total = row.number("Count"), row.number("Total Time(us)")
        if count is None or total is None:
            raise FuseLensError(f"{row.where}: 'Count' and 'Total Time(us)' must be numbers")
        if count < 0 or total < 0:
            raise FuseLensError(f"{row.where}: a negative 'Count' or 'Total Time(us)'")
        average = row.number("Avg Time(us)")  # a column the file lacks reads as missing, like N/A
        totals.append(OpTypeStat(
            op_type=row.text("OP Type") or "", core_type=row.text("Core Type") or "", count=int(count),
            total_us=total, avg_us=average if average is not None else total / max(count, 1),
            min_us=row.number("Min Time(us)"), max_us=row.number("Max Time(us)"), ratio_pct=row.number("Ratio(%)")))
    totals.sort(key=lambda t: (-t.total_us, t.op_type, t.core_type))
    return GraphRun(label=label, steps=0, op_types=totals, source=SOURCE)

