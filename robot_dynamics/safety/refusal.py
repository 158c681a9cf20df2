"""A refused input: one exception type with a short, stable cause key (for counters, logs and tests)."""

from __future__ import annotations


class Refused(ValueError):
    """An input refused by a check; ``cause`` is a short stable key, the message says why in a sentence."""

    def __init__(self, cause: str, text: str) -> None:
        super().__init__(text)
        self.cause = cause


__all__ = ["Refused"]
