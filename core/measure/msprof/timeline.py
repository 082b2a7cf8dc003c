"""msprof's `msprof_*.json` and torch_npu's `trace_view.json`: Chrome traces of the device tasks.

Both are a bare JSON list of trace events (no `traceEvents` wrapper, which is accepted too), with
`ts` a string of microseconds (so no precision is lost on 1.7e15-us epochs) and `dur` a number. The
"Ascend Hardware" process holds the device tasks, whose `args` carry `Task Type`, `Physic Stream
Id`, `Task Id`; kernel names (mangled C++ symbols, hash-suffixed names) are kept as given.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fuselens.core.errors import FuseLensError
from fuselens.core.measure.msprof.op_summary import OpRecord
from fuselens.core.measure.msprof.task_time import is_kernel
from fuselens.core.measure.profile_csv import number

KIND = "timeline"
HARDWARE_PROCESS = "Ascend Hardware"  # the process of device tasks
_OPENING = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*(?:\[\s*\{|\{\s*"traceEvents"\s*:\s*\[\s*\{)')
_EVENT_PHASE = re.compile(rb'"ph"\s*:\s*"[A-Za-z]"')


def recognises(head: bytes) -> bool:
    """A JSON list of objects (or a `traceEvents` object) whose first events carry a Chrome-trace `ph`."""
    return bool(_OPENING.match(head)) and bool(_EVENT_PHASE.search(head))


def read_timeline(paths: list[Path]) -> list[OpRecord]:
    """The device tasks of a timeline (all its slices): `ph: X` events of the "Ascend Hardware" process
    (or, without that process, events whose args name a `Task Type`), the runtime's own tasks left out."""
    events: list[dict] = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except OSError as e:
            raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
        except UnicodeDecodeError:
            raise FuseLensError(f"{path}: not UTF-8 text, so not a profiling timeline") from None
        except (json.JSONDecodeError, RecursionError) as e:
            line = f", line {e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
            raise FuseLensError(f"{path}{line}: not valid JSON ({getattr(e, 'msg', 'nested too deeply')})") from None
        data = data.get("traceEvents") if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise FuseLensError(f"{path}: not an msprof timeline (expected a JSON list of trace events, as msprof "
                                "and torch_npu write)")
        events += [e for e in data if isinstance(e, dict)]
    hardware = {_pid(e) for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                and isinstance(e.get("args"), dict) and e["args"].get("name") == HARDWARE_PROCESS} - {None}
    records = []
    for i, event in enumerate(events):
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if event.get("ph") != "X" or not (_pid(event) in hardware or (not hardware and "Task Type" in args)):
            continue
        where = f"{paths[0]}, event {i}"
        start, duration = number(str(event.get("ts")), where, "ts"), number(str(event.get("dur")), where, "dur")
        task_type = str(args.get("Task Type", ""))
        if start is None or duration is None or not event.get("name") or not is_kernel(task_type):
            continue
        records.append(OpRecord(line=i, name=str(event["name"]), op_type="", task_type=task_type,
                                device="npu:0", start_us=start, dur_us=duration, block_dim=None, input_shapes=(),
                                infer_id=None))
    return records


def _pid(event: dict) -> int | str | None:
    """A trace event's process id; None unless a number or a string (a JSON list or object is no id)."""
    pid = event.get("pid")
    return pid if isinstance(pid, (int, float, str)) and not isinstance(pid, bool) else None
