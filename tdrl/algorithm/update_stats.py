"""``UpdateStats``: an update's loss terms, read from the device only when looked at.

``Algorithm.update`` returns the detached loss terms of its gradient step(s). Turning them
into Python floats right away (``.item()`` / ``.tolist()``) would make the host wait for
the device after every update; on a GPU that stalls the queue of kernels the next update
could already be running. ``UpdateStats`` keeps the terms as tensors and reads them all
with one transfer the first time a value is asked for; :func:`materialize` reads many
updates' stats with one transfer (what the trainer does once per progress-bar refresh and
per logged row).

To the caller it is a ``dict[str, float]``-like mapping: ``stats["loss_actor"]`` is a
float, iteration gives the keys in the order the stages logged them, and ``"loss"`` (the
sum of the ``loss_*`` terms, as in Tianshou's trainers) comes last unless set explicitly.

>>> import torch
>>> s = UpdateStats([("loss_q", torch.tensor(1.5)), ("alpha", torch.tensor(0.2))])
>>> s.is_materialized
False
>>> list(s), round(s["loss"], 4), s.is_materialized
(['loss_q', 'alpha', 'loss'], 1.5, True)
>>> round(dict(s)["alpha"], 4)
0.2
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import Any

import torch

__all__ = ["UpdateStats", "materialize"]

_LOSS = "loss"


class UpdateStats(MutableMapping[str, float]):
    """The statistics of one update; tensor values are read lazily (see the module doc).

    :param terms: ``(name, value)`` pairs; a value is a (one-element) tensor or a number.
    :param derive_loss: add ``"loss"``, the sum of the ``loss_*`` values, when there is at
        least one and ``"loss"`` is not given.
    """

    def __init__(self, terms: Iterable[tuple[str, Any]] = (), *, derive_loss: bool = True) -> None:
        self._data: dict[str, Any] = dict(terms)
        self._derive_loss = derive_loss

    # -- reading ------------------------------------------------------------------------
    @property
    def is_materialized(self) -> bool:
        """Whether every value is already a Python float (no device read is pending)."""
        return not any(isinstance(v, torch.Tensor) for v in self._data.values())

    def pending(self) -> list[torch.Tensor]:
        """The tensor values not yet read, in key order."""
        return [v for v in self._data.values() if isinstance(v, torch.Tensor)]

    def _fill(self, values: Iterator[float]) -> None:
        for k, v in self._data.items():
            if isinstance(v, torch.Tensor):
                self._data[k] = next(values)

    def _materialize(self) -> None:
        if not self.is_materialized:
            materialize([self])

    def _derived(self) -> bool:
        return (
            self._derive_loss
            and _LOSS not in self._data
            and any(k.startswith("loss_") for k in self._data)
        )

    def __getitem__(self, key: str) -> float:
        if key == _LOSS and self._derived():
            self._materialize()
            return float(sum(v for k, v in self._data.items() if k.startswith("loss_")))
        value = self._data[key]
        if isinstance(value, torch.Tensor):
            self._materialize()
            value = self._data[key]
        return float(value)

    def __iter__(self) -> Iterator[str]:
        yield from self._data
        if self._derived():
            yield _LOSS

    def __len__(self) -> int:
        return len(self._data) + int(self._derived())

    def __contains__(self, key: object) -> bool:
        return key in self._data or (key == _LOSS and self._derived())

    # -- writing ------------------------------------------------------------------------
    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        if key == _LOSS and self._derived():
            self._derive_loss = False
            return
        del self._data[key]

    def merge(self, other: UpdateStats | dict[str, Any]) -> UpdateStats:
        """Add ``other``'s terms (tensors stay unread; a derived ``"loss"`` is not copied:
        this one's covers both). Returns ``self``."""
        items = other._data.items() if isinstance(other, UpdateStats) else other.items()
        for k, v in items:
            if k != _LOSS:
                self._data[k] = v
        return self

    def __repr__(self) -> str:
        return f"UpdateStats({dict(self)!r})"


def materialize(stats: Sequence[Any]) -> None:
    """Read the pending tensors of all ``stats`` with one device-to-host transfer
    (entries that are not :class:`UpdateStats`, such as plain dicts, are skipped).

    >>> a = UpdateStats([("loss_q", torch.tensor(1.0))])
    >>> b = UpdateStats([("loss_q", torch.tensor(3.0))])
    >>> materialize([a, b]); a.is_materialized and b.is_materialized
    True
    """
    todo = [s for s in stats if isinstance(s, UpdateStats) and not s.is_materialized]
    if not todo:
        return
    flat = [t.detach().reshape(()).float() for s in todo for t in s.pending()]
    if len({t.device for t in flat}) == 1:
        values: list[float] = torch.stack(flat).tolist()
    else:  # terms on several devices: one transfer per device
        values = [float(t.item()) for t in flat]
    it = iter(values)
    for s in todo:
        s._fill(it)
