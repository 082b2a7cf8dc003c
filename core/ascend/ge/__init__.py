"""What the Ascend graph engine leaves behind: its graph dumps by stage, and its fusion ledger.

`dump` reads one `ge_proto_*.txt` / `ge_onnx_*.pbtxt` into a `core.graph.Graph`; `stages` turns a
folder of them into per-graph timelines; `provenance` reads the toolchain's own record on a node
(`pass_name`, `_datadump_original_op_names`); `diff` compares two graphs by pass; `fusion_result`
reads and writes fusion_result.json. Qt-free and TensorFlow-free, like the rest of core.
"""
