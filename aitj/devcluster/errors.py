"""The errors of building and installing what the local cluster runs (a leaf: imports nothing)."""

from __future__ import annotations


class BuildError(RuntimeError):
    """A build or install step failed; the message carries what to do or the tail of the step's log."""
