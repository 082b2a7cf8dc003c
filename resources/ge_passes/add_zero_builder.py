"""Add(x, 0.0) -> x, graph-building style with constant value matching: a FuseLens template.

With enable_const_value_match the pattern's constant must equal the graph's, shape, data type and
bytes: a float32 scalar 0.0 here, so no meet_requirements is needed.
"""

from ge.es.all import Add
from ge.es.graph_builder import GraphBuilder
from ge.passes import (
    PassStage,
    PatternFusionPass,
    PatternMatcherConfigBuilder,
    create_pattern,
    register_fusion_pass,
)


@register_fusion_pass(name="AddZeroConstValuePass", stage=PassStage.BEFORE_INFER_SHAPE)
class AddZeroConstValuePass(PatternFusionPass):
    def __init__(self):
        super().__init__(PatternMatcherConfigBuilder().enable_const_value_match().build())

    def patterns(self):
        builder = GraphBuilder("add_zero")
        x = builder.create_input(0)
        add = Add(x, builder.create_scalar_float(0.0))
        found = create_pattern(builder.build_and_reset([add]))
        found.capture_tensor(x)
        return [found]

    def replacement(self, match_result):
        builder = GraphBuilder("identity")
        x = builder.create_input(0)
        return builder.build_and_reset([x])
