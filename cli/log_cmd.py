"""`import-log`: what the toolchain's logs (and an OM model as JSON) say it did; with --model, set against
FuseLens's prediction as evidence beside the dumps and fusion_result.json.

The records are read by content (core/ascend/toolchain_log.py, core/ascend/om_json.py): any file name,
folders of them, plog lines with or without their prefix.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuselens.cli.common import fuse_model, print_json
from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.ascend.om_json import OmModel
from fuselens.core.ascend.toolchain_log import REFUSAL_CODES, ToolchainLog
from fuselens.session.npu_check.log_check import times


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-log", help="read the TF adapter's / GE's logs (plog-*.log, host-*.log) and OM models "
                                          "as JSON; with --model, set them against FuseLens's prediction")
    p.add_argument("paths", nargs="+", metavar="FILE",
                   help="log files, OM models as JSON (atc --mode=1) or folders holding them (read by content)")
    p.add_argument("--model", help="set the records against what FuseLens predicts for this model under the pass "
                                   "selection")
    add_pass_selection_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_import_log)


def run_import_log(args: argparse.Namespace) -> int:
    from fuselens.session.npu_check.evidence import records_evidence

    evidence = records_evidence(args.paths)
    report = None
    if args.model:
        from fuselens.session.npu_check import check_prediction

        _, pipeline = fuse_model(args)
        report = check_prediction(pipeline, evidence, model=args.model)
    if args.json:
        data: dict[str, Any] = {"log": evidence.log.to_json() if evidence.log else None,
                                "om_json": evidence.om_model.to_json() if evidence.om_model else None,
                                "notes": evidence.notes}
        if report is not None:
            data["check"] = report.to_json()
        print_json(data)
        return 0
    parts = [format_log(evidence.log)] if evidence.log else []
    parts += [format_om_model(evidence.om_model)] if evidence.om_model else []
    parts += [f"note: {n}" for n in evidence.notes] if report is None else []
    if report is not None:
        from fuselens.cli.check_text import format_check

        parts.append(format_check(report))
    print("\n".join(parts))
    return 0


def format_log(log: ToolchainLog) -> str:
    """What the logs say, by kind of record."""
    names = ", ".join(Path(s).name for s in log.sources[:3]) + (f" and {len(log.sources) - 3} more"
                                                                if len(log.sources) > 3 else "")
    lines = [f"{len(log.sources)} log{'s' if len(log.sources) != 1 else ''} ({names}): {log.lines} lines"]
    scope = log.scope_passes()
    if scope:
        lines.append("scope passes (TF parser):")
        for s in scope.values():
            registered = {True: "registered on (general)", False: "registered off", None: "not registered here"}
            runs = f"matched in {s.matched} of {times(s.matched + s.not_matched, 'run')}" if s.ran else "never ran"
            lines.append(f"  {s.name:40s} {registered[s.registered]:24s} {runs}")
    fe = log.fe_passes()
    if fe:
        lines.append("FE graph fusion passes that ran:")
        lines += [f"  {name:40s} {times(runs, 'run'):>8s} {total:10d} us" for name, (runs, total) in fe.items()]
    if log.refusals:
        lines.append("AutoFuse refusals:")
        for r in log.refusals:
            nodes = " and ".join(f"{n} ({t})" for n, t in zip(r.nodes, r.types)) or "(nodes not named)"
            known = f" ({REFUSAL_CODES[r.code]})" if r.code in REFUSAL_CODES and r.code != "NF9999" else ""
            lines.append(f"  [{r.code}] {r.reason}{known}: {nodes}  {Path(r.where).name}")
    if log.empty:
        lines.append("  no fusion record (scope pass registrations and runs, FE graph fusion times and AutoFuse "
                     "refusals are INFO lines: ASCEND_GLOBAL_LOG_LEVEL=1)")
    return "\n".join(lines)


def format_om_model(model: OmModel, *, limit: int = 30) -> str:
    """The fused ops of an OM model as JSON."""
    fused = model.fused_ops()
    lines = [f"{model.source}: OM model {model.name or '(unnamed)'}, {len(model.graphs)} graph"
             f"{'s' if len(model.graphs) != 1 else ''}, {len(model.ops)} ops, {len(fused)} fused by the toolchain"]
    for op in fused[:limit]:
        origin = f" <- {', '.join(op.provenance.original_names)}" if op.provenance.original_names else ""
        by = f" [{', '.join(op.provenance.passes)}]" if op.provenance.passes else ""
        lines.append(f"  {op.name} ({op.op_type or '?'}){origin}{by}")
    if len(fused) > limit:
        lines.append(f"  ... {len(fused) - limit} more (--json for all)")
    return "\n".join(lines)
