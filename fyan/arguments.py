"""Command-line value types that refuse what cannot work, with a message (argparse exits 2).

``--parallelism -1`` used to be accepted and left a daemon idling forever:
every count, duration and port of every command is parsed by one of these.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(minimum: int, what: str) -> Callable[[str], int]:
    """A whole number ≥ ``minimum`` (``what`` names it in the message)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be at least {minimum} (got {value})")
        return value
    return parse


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    value = at_least(0, "the port")(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"the port must be at most 65535 (got {value})")
    return value


def seconds(text: str) -> float:
    """A positive duration in seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seconds must be a number, not {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be a finite number above 0 (got {text})")
    return value


parallelism = at_least(1, "--parallelism (stage attempts at once)")
