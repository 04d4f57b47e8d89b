"""Minimal placeholder; replaced by the full Batch implementation."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDict


class Batch(TensorDict):
    """A TensorDict with attribute access (placeholder)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.get(name)
        except KeyError:
            raise AttributeError(name) from None
