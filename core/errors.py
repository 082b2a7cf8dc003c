"""The one error type a user sees: a message naming the file (or thing) and what is wrong."""

from __future__ import annotations


class FuseLensError(Exception):
    """A problem with the user's input or environment, worded for the user (never a traceback)."""
