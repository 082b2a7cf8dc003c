"""The error types a front end handles: a user-worded problem, and cancelled work."""

from __future__ import annotations


class FuseLensError(Exception):
    """A problem with the user's input or environment, worded for the user (never a traceback)."""


class Cancelled(Exception):
    """Long work (fusion, layout, a run) stopped because its caller asked; not an error."""
