"""AutoFuse (graph-autofusion): AUTOFUSE_FLAGS, the op-class table, the grouping and the pass.

Importing the package registers the pass.
"""

from passes.autofuse import autofuse_pass, flags, grouping, op_classes

__all__ = ["autofuse_pass", "flags", "grouping", "op_classes"]
