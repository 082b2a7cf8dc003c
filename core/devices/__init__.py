"""The TensorFlow devices a run can use (`backends`: cpu, gpu, npu, with why one is unavailable) and the
Ascend NPU session set-up (`npu_session`: imported by a local npu run, copied as it is into an NPU
bundle)."""
