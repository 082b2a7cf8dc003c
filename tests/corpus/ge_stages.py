"""The 58 stage dumps of one graph that a 2020 host log lists (tests/corpus/ge_dumps/stage_names_58.txt),
written as that GE named them: `ge_proto_%05d_<Stage>.txt`, no graph part."""

from __future__ import annotations

from pathlib import Path

from fuselens.core.formats.loaders import load_model
from fuselens.passes.pipeline import run_pipeline
from tests.npu_artifacts import ge_ops, ge_proto_text, toolchain_fusions

NAMES_FILE = Path(__file__).resolve().parent / "ge_dumps" / "stage_names_58.txt"
STAGES_58 = [line for line in NAMES_FILE.read_text().splitlines() if line and not line.startswith("#")]
FE_FUSION = "OptimizeOriginalGraph_FeGraphFusionAfter"


def write_58_stages(root: Path, sample: str = "demo", *, first_index: int = 3) -> list[str]:
    """The sample as it came in up to FE's graph fusion, fused from there on; returns the stage labels in
    order (`OptimizeSubGraphBefore#2` from a name's second dump on)."""
    pipeline = run_pipeline(load_model(sample).graph)
    original = ge_proto_text(ge_ops(pipeline.original))
    fused = ge_proto_text(ge_ops(pipeline.fused, toolchain_fusions(pipeline)))
    fusion = STAGES_58.index(FE_FUSION)
    root.mkdir(parents=True, exist_ok=True)
    labels: list[str] = []
    seen: dict[str, int] = {}
    for i, stage in enumerate(STAGES_58):
        (root / f"ge_proto_{first_index + i:05d}_{stage}.txt").write_text(original if i < fusion else fused)
        seen[stage] = seen.get(stage, 0) + 1
        labels.append(stage if seen[stage] == 1 else f"{stage}#{seen[stage]}")
    return labels
