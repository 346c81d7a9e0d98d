"""What every command prints to stderr: progress and errors, as written (no markup)."""

from __future__ import annotations

from rich.console import Console

err = Console(stderr=True, highlight=False)


def say(message: str) -> None:
    """say prints a progress line to stderr."""
    err.print(message, highlight=False)
