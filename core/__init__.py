"""FuseLens core, by concern (nothing here is a pass or imports Qt):

- `graph`: the IR (queries, editor, wire-format reader, node tables, order and reachability) and the
  protobuf messages and op facts it is built on; never imports TensorFlow.
- `formats`: loaders, samples, switch files, file writes, and what TensorFlow is asked in-process.
- `measure`: what a run measured (result model, kernel-to-node profile, output comparison, msprof CSVs).
- `devices`: the TensorFlow backends and the NPU session set-up.
- `layout`: graph layout for the panes (boxes, edges, scopes, caches, SVG).
- `runtime`: local runs (runner, child process, lowering, run view, trace export).
- `ascend`: what the Ascend toolchain writes or reads (GE dumps, fusion_result.json, NPU bundle, host
  transport, profile import).
- `errors`, `wording`, `tfimport`: the error type, how names are quoted, the one quiet TensorFlow import.

`layout`, `runtime` and `ascend` are independent of each other (pyproject's import-linter contracts).
"""
