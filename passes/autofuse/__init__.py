"""AutoFuse (graph-autofusion): AUTOFUSE_FLAGS, the op-class table, the grouping and the pass.

The catalog (passes/registry.py) imports every module here; autofuse_pass.py registers the pass.
"""
