"""Rebuild core/ascend/tf_targets/*.json: the op registry (ops, their attributes and defaults) of the
TensorFlow versions an Ascend host runs, read from those versions' own wheels.

    pip download --no-deps --only-binary=:all: --python-version 37 --platform manylinux2010_x86_64 \
        tensorflow-cpu==1.15.0 tensorflow-cpu==2.6.5 -d WHEELS
    python scripts/build_tf_op_tables.py WHEELS

TF 1.15's generated op wrappers (`tensorflow_core/python/ops/gen_*.py`) carry their OpList
serialized, so its table is exact. TF 2.6's no longer do: there each op's wrapper names its
attributes (`_attrs = ("T", ..., "strides", ...)`) and gives the defaults as keyword defaults, so
type attributes TensorFlow infers have no recorded default. The op libraries read are those under
python/ and tf2xla's; contrib ops are left out (a frozen graph that needs them does not import on a
plain host either).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuselens.core.ascend.npu_target import TARGETS, attr_to_py  # noqa: E402

GEN_FILE = re.compile(r"^tensorflow(?:_core)?/(?:python/(?:[\w/]+/)?|compiler/tf2xla/ops/)gen_\w+\.py$")


def ops_from_oplists(wheel: zipfile.ZipFile) -> dict[str, dict[str, Any]]:
    """TF 1.x: every gen file ends with `_InitOpDefLibrary(b"...")`, the serialized OpList."""
    from tensorflow.core.framework import op_def_pb2

    ops: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in wheel.namelist() if GEN_FILE.match(n)):
        tree = ast.parse(wheel.read(name))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_InitOpDefLibrary"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                for op in op_def_pb2.OpList.FromString(node.args[0].value).op:
                    ops[op.name] = {a.name: attr_to_py(a.default_value) if a.HasField("default_value") else None
                                    for a in op.attr}
    return ops


def ops_from_wrappers(wheel: zipfile.ZipFile) -> dict[str, dict[str, Any]]:
    """TF 2.x: per wrapper, the op name from `_apply_op_helper("Op", ...)`, the attribute names from the
    `_attrs = (name, value, ...)` tuple, defaults from the wrapper's keyword defaults."""
    ops: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in wheel.namelist() if GEN_FILE.match(n)):
        for function in ast.walk(ast.parse(wheel.read(name))):
            if not isinstance(function, ast.FunctionDef):
                continue
            op_name, attrs = None, None
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "_apply_op_helper" and node.args
                        and isinstance(node.args[0], ast.Constant)):
                    op_name = node.args[0].value
                if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_attrs" for t in node.targets)
                        and isinstance(node.value, ast.Tuple)):
                    attrs = [e.value for e in node.value.elts[::2] if isinstance(e, ast.Constant)]
            if op_name is None:
                continue
            args = function.args
            defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
            ops[op_name] = {attr: _literal(defaults[attr]) if attr in defaults else None for attr in attrs or []}
    return ops


def _literal(node: ast.expr) -> Any:
    """A keyword default as JSON: literals as they are, `_dtypes.float32` as "DT_FLOAT"."""
    if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "_dtypes":
        from tensorflow.core.framework import types_pb2
        from tensorflow.python.framework import dtypes

        return types_pb2.DataType.Name(dtypes.as_dtype(node.attr).as_datatype_enum)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def main(folder: str) -> None:
    for target in TARGETS.values():
        wheels = sorted(Path(folder).glob(f"tensorflow_cpu-{target.version}-*.whl"))
        if not wheels:
            raise SystemExit(f"{folder}: no tensorflow_cpu-{target.version} wheel (see this script's docstring)")
        with zipfile.ZipFile(wheels[0]) as wheel:
            ops = ops_from_oplists(wheel) if target.version.startswith("1.") else ops_from_wrappers(wheel)
        data = {"tensorflow": target.version, "built_from": wheels[0].name, "ops": dict(sorted(ops.items()))}
        target.table_path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"{target.table_path}: {len(ops)} ops of TensorFlow {target.version}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
