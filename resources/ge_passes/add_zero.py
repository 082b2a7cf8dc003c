"""Add(x, 0) -> x, expression style: a FuseLens template for a GE Python fusion pass.

The pattern `inputs[0] + 0` matches an Add of any constant (matching compares op types, not values),
so meet_requirements checks that the constant is zero; the replacement is the input itself.
"""

from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


def is_zero(tensor):
    values = tensor.data if isinstance(tensor.data, list) else [tensor.data]
    while values and isinstance(values[0], list):
        values = [v for row in values for v in row]
    return bool(values) and all(abs(float(v)) < 1e-6 for v in values)


@register_fusion_pass(name="AddZeroPass", stage=PassStage.BEFORE_INFER_SHAPE)
class AddZeroPass(PatternFusionPass):
    @pattern
    def add_zero(self, inputs):
        return inputs[0] + 0

    def meet_requirements(self, match_result):
        for node in match_result.get_matched_nodes():
            if node.type == "Const":
                return is_zero(node.get_attr("value"))
        return False

    def replacement(self, inputs):
        return inputs[0]
