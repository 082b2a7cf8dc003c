"""ge.passes: the pass classes, hooks' arguments, pattern helpers and registration."""

from fuselens.passes.ge_python.api.builder import NodeIo, Pattern, create_pattern, create_replacement
from fuselens.passes.ge_python.api.hooks import (
    DecomposePass,
    FusionBasePass,
    MatchResult,
    PassContext,
    PassStage,
    PatternFusionPass,
    PatternMatcherConfig,
    PatternMatcherConfigBuilder,
    clear_registered_passes,
    get_registered_passes,
    pattern,
    register_decompose_pass,
    register_fusion_pass,
)
from fuselens.passes.ge_python.api.missing import missing_names

__all__ = ["DecomposePass", "FusionBasePass", "MatchResult", "NodeIo", "PassContext", "PassStage", "Pattern",
           "PatternFusionPass", "PatternMatcherConfig", "PatternMatcherConfigBuilder", "clear_registered_passes",
           "create_pattern", "create_replacement", "get_registered_passes", "pattern", "register_decompose_pass",
           "register_fusion_pass"]
__getattr__ = missing_names("ge.passes")
