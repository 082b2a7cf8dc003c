"""FuseLens core: graph IR, loaders, samples, runtime and everything else that is not a pass or Qt."""
