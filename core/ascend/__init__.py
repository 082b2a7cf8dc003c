"""Everything the Ascend toolchain writes or reads: GE graph dumps and stages and fusion_result.json (`ge`),
the NPU bundle run on an Ascend host (`npu_bundle`, `npu_script`, `npu_target`; the driver that runs
there is data, host/npu_driver.py), the host transport (`remote`) and the import of a profile it brings
back (`profile_import`). Switch files and msprof's CSVs, which a local npu run shares, are in
core.formats and core.measure."""
