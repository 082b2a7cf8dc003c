"""Where the AMCT passes' toolchain names were checked (their `switch.sources`): the AMCT manual's list
of fusions, and the FE graph fusion passes that do the same folds on the device."""

AMCT_DOC = ("https://www.hiascend.com/document/detail/en/canncommercial/850/devaids/amct/atlasamct_16_0333.html "
            "(AMCT for TensorFlow, Fusion Support)")
_FE_GRAPH = "dengguojie/vue-element-admin ops/built-in/fusion_pass/graph_fusion/ai_core/"
FE_CONV_BN = (f"{_FE_GRAPH}conv_batchnorm_fusion_pass.cc "
              "(REGISTER_PASS(\"ConvBatchnormFusionPass\", BUILT_IN_GRAPH_PASS, ...): Conv2D, Conv3D or "
              "DepthwiseConv2D + BatchNorm/BNInferenceD); hicann/ge compiler/engines/nn_engine/fusion/"
              "graph_optimizer/fusion_common/fusion_pass_name.h")
FE_CONV_MUL = (f"{_FE_GRAPH}a_conv2d_mul_fusion_pass.cc "
               "(REGISTER_PASS(\"AConv2dMulFusion\", BUILT_IN_GRAPH_PASS, ...): Conv2D or Conv3D + Mul)")
FE_CLOSABLE = ("hicann/ge compiler/engines/nn_engine/inc/common/fusion_pass_util.h (ForbiddenClosedPass, the passes "
               "a switch file cannot close, lists neither)")
FE_CONV3D_BN = f"{_FE_GRAPH}batchnorm_fusion_pass.cc (ABatchnormFusionPass: small-op BatchNorm after a Conv3D only)"
