"""Numeric comparison of the original and fused graphs' outputs, with tolerances by dtype.

A fusion reorders floating-point work (folded BN weights, one XLA kernel instead of three), so
outputs differ in the last bits; float16 has ~3 decimal digits, so it gets looser tolerances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.measure.result import OutputComparison

# (rtol, atol) for np.allclose: |fused - original| <= atol + rtol * |original|
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-7, 1e-9),
}
EXACT = (0.0, 0.0)


def tolerance(dtype: np.dtype | str) -> tuple[float, float]:
    """(rtol, atol) for a dtype: exact for integers and bools."""
    return TOLERANCES.get(np.dtype(dtype).name if not isinstance(dtype, str) else dtype, EXACT)


def compare_arrays(original: np.ndarray, fused: np.ndarray, *, original_name: str = "",
                   fused_name: str = "", tolerances: tuple[float, float] | None = None) -> OutputComparison:
    """Max abs, max rel and mean abs error and the allclose verdict; NaN/Inf counted per side.

    `tolerances` (rtol, atol) replaces the dtype's (a bisect's --rtol / --atol)."""
    original, fused = np.asarray(original), np.asarray(fused)
    dtype = original.dtype.name
    rtol, atol = tolerances or tolerance(dtype)
    base = {"original": original_name, "fused": fused_name or original_name, "dtype": dtype,
            "shape": [int(d) for d in original.shape], "rtol": rtol, "atol": atol}
    if original.shape != fused.shape or original.dtype != fused.dtype:
        return OutputComparison(**base, max_abs=None, max_rel=None, mean_abs=None, allclose=False,
                                note=f"fused output is {fused.dtype.name}{list(fused.shape)}, "
                                     f"original is {dtype}{list(original.shape)}")
    numeric = np.issubdtype(original.dtype, np.number)
    a = original.astype(np.float64) if numeric else original.astype(np.int64)
    b = fused.astype(np.float64) if numeric else fused.astype(np.int64)
    bad_a, bad_b = ~np.isfinite(a), ~np.isfinite(b)
    both = ~(bad_a | bad_b)
    diff = np.abs(a[both] - b[both])
    rel = diff / np.maximum(np.abs(a[both]), np.finfo(np.float64).tiny)
    nonfinite_match = np.array_equal(bad_a, bad_b) and np.array_equal(a[bad_a], b[bad_b], equal_nan=True)
    close = nonfinite_match and bool(np.all(diff <= atol + rtol * np.abs(a[both])))
    note = ""
    if bad_a.any() or bad_b.any():
        note = (f"NaN/Inf: {int(bad_a.sum())} in the original, {int(bad_b.sum())} in the fused output"
                + ("" if nonfinite_match else " at different positions"))
    return OutputComparison(
        **base,
        max_abs=float(diff.max()) if diff.size else None,
        max_rel=float(rel.max()) if rel.size else None,
        mean_abs=float(diff.mean()) if diff.size else None,
        allclose=close,
        nonfinite_original=int(bad_a.sum()),
        nonfinite_fused=int(bad_b.sum()),
        note=note,
    )


def compare_outputs(original: Mapping[str, np.ndarray], fused: Mapping[str, np.ndarray],
                    pairs: Sequence[tuple[str, str]],
                    tolerances: tuple[float, float] | None = None) -> list[OutputComparison]:
    """One comparison per (original tensor, fused tensor) pair."""
    missing = [o for o, _ in pairs if o not in original] + [f for _, f in pairs if f not in fused]
    if missing:
        raise FuseLensError(f"outputs missing from the run: {', '.join(missing)}")
    return [compare_arrays(original[o], fused[f], original_name=o, fused_name=f, tolerances=tolerances)
            for o, f in pairs]


def pair_outputs(original: Graph, fused: Graph,
                 original_to_final: Mapping[str, Sequence[str]] | None = None) -> list[tuple[str, str]]:
    """(original tensor, fused tensor) per output of the original graph, as `node:port`.

    An output keeps its name, or sits inside a fused call node (found through the call's
    FunctionDef results), or was replaced by a node the provenance names.
    """
    fused_outputs = fused.outputs()
    pairs = []
    unpaired = []
    for name in original.outputs():
        target = _fused_tensor(name, fused, fused_outputs, original_to_final or {})
        if target is None:
            unpaired.append(name)
        else:
            pairs.append((f"{name}:0", target))
    if unpaired and len(original.outputs()) == len(fused_outputs) and not pairs:
        return [(f"{o}:0", f"{f}:0") for o, f in zip(original.outputs(), fused_outputs)]
    if unpaired:
        raise FuseLensError(f"cannot tell which fused-graph output matches original output(s) "
                            f"{', '.join(unpaired)} (fused outputs: {', '.join(fused_outputs)})")
    return pairs


def _fused_tensor(name: str, fused: Graph, fused_outputs: Sequence[str],
                  original_to_final: Mapping[str, Sequence[str]]) -> str | None:
    if name in fused:
        return f"{name}:0"
    functions = fused.functions
    for call in fused_outputs:
        function = functions.get(fused.op(call))
        if function is None:
            continue
        results = [function.ret[arg.name] for arg in function.signature.output_arg]
        for port, result in enumerate(results):
            if result.split(":")[0] == name:
                return f"{call}:{port}"
    finals = [n for n in original_to_final.get(name, ()) if n in fused_outputs]
    return f"{finals[0]}:0" if len(finals) == 1 else None
