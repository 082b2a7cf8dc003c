"""The working state both front ends share: the model, its PassConfig, the fusion and run results."""

from fuselens.session.session import SIDES, FusionJob, Session, Stage

__all__ = ["SIDES", "FusionJob", "Session", "Stage"]
