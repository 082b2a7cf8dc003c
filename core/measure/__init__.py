"""What a run measured, wherever it ran: the result model and its JSON (`result`), kernel events mapped back
to graph nodes (`profile`), output comparison (`compare`) and msprof's CSVs read into the same model
(`msprof`). A local run (core.runtime) and an Ascend host's run (core.ascend) both write and read these."""
