"""Rebuild resources/op_outputs.json: per op of the installed TensorFlow's registry, its output
arguments, whether it is stateful, and its attributes' defaults.

    .venv/bin/python scripts/build_op_outputs.py

FuseLens builds the FunctionDef of a fused node without TensorFlow (core/graph/opdefs.py): a body node's
inputs name the producer's output argument (`node:output_arg:index`), the signature needs each
tensor's dtype, and TensorFlow's importer fills in default attributes, so the function is written
as TensorFlow would write it. Regenerate when the pinned TensorFlow changes; an op missing from
the table is looked up in TensorFlow's registry at run time (importing TensorFlow).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuselens.core.graph.opdefs import TABLE_PATH, op_entry  # noqa: E402
from fuselens.core.tfimport import import_tensorflow  # noqa: E402


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = import_tensorflow()
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session

    ops = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList()))
    table = {op.name: op_entry(op) for op in sorted(ops.op, key=lambda op: op.name)}
    data = {"tensorflow": tf.__version__, "ops": table}
    TABLE_PATH.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{TABLE_PATH}: {len(table)} ops of TensorFlow {tf.__version__}")


if __name__ == "__main__":
    main()
