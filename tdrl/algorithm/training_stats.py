"""``TrainingStats``: an update's statistics as attributes, Tianshou 2.0's typed form.

tdrl's algorithms return their update statistics as a mapping,
:class:`~tdrl.algorithm.update_stats.UpdateStats` (``stats["loss_actor"]``). Code written
against Tianshou's typed stats (``stats.loss_actor``, ``stats.get_loss_stats_dict()``, a
``TrainingStatsWrapper`` that adds fields to another algorithm's stats) can use these
classes; :meth:`TrainingStats.from_mapping` builds one from an ``UpdateStats``.

>>> import torch
>>> from tdrl.algorithm.update_stats import UpdateStats
>>> stats = TrainingStats.from_mapping(UpdateStats([("loss_q", torch.tensor(0.5))]))
>>> stats.loss_q, stats.get_loss_stats_dict()
(0.5, {'loss_q': 0.5, 'loss': 0.5})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tdrl.data.stats import SequenceSummaryStats

__all__ = ["TrainingStats", "TrainingStatsWrapper"]


@dataclass
class TrainingStats:
    """The statistics of one update: the time it took, plus any loss terms as attributes.

    Algorithms (or callers) add their terms as plain attributes (``stats.loss_q = 0.3``);
    :meth:`get_loss_stats_dict` returns them for logging.

    :param train_time: seconds the update took.
    :param smoothed_loss: running averages of the losses (kept by a trainer).
    """

    train_time: float = 0.0
    smoothed_loss: dict[str, Any] = field(default_factory=dict)

    NON_LOSS_FIELDS: ClassVar[frozenset[str]] = frozenset({"train_time", "smoothed_loss"})
    """Attributes that are not loss terms (left out of :meth:`get_loss_stats_dict`)."""

    @classmethod
    def from_mapping(cls, terms: Mapping[str, Any], train_time: float = 0.0) -> TrainingStats:
        """A ``TrainingStats`` with one attribute per entry of ``terms`` (for instance the
        :class:`~tdrl.algorithm.update_stats.UpdateStats` an ``update`` returned)."""
        stats = cls(train_time=train_time)
        for key, value in terms.items():
            setattr(stats, key, value)
        return stats

    def _stat_attributes(self) -> dict[str, Any]:
        """Every attribute that holds a statistic, by name."""
        return dict(vars(self))

    def get_loss_stats_dict(self) -> dict[str, Any]:
        """The loss terms for logging: every public attribute except :attr:`NON_LOSS_FIELDS`
        and those that are ``None``; a :class:`~tdrl.data.SequenceSummaryStats` gives its
        mean.

        >>> s = TrainingStats(train_time=2.0)
        >>> s.loss = 1.5; s.skipped = None
        >>> s.get_loss_stats_dict()
        {'loss': 1.5}
        """
        out: dict[str, Any] = {}
        for key, value in self._stat_attributes().items():
            if key.startswith("_") or key in self.NON_LOSS_FIELDS or value is None:
                continue
            out[key] = value.mean if isinstance(value, SequenceSummaryStats) else value
        return out


def _wrapped_field(name: str) -> property:
    """A :class:`TrainingStats` field of a wrapper: read from and written to the wrapped
    stats, so both always agree."""

    def get(self: TrainingStatsWrapper) -> Any:
        return getattr(self.wrapped_stats, name)

    def put(self: TrainingStatsWrapper, value: Any) -> None:
        setattr(self.wrapped_stats, name, value)

    return property(get, put, doc=f"The wrapped stats' ``{name}``.")


class TrainingStatsWrapper(TrainingStats):
    """Another update's :class:`TrainingStats` plus fields of its own (e.g. what a wrapper
    algorithm such as ICM adds to the wrapped algorithm's stats).

    Reading an attribute the wrapper does not have reads the wrapped stats'; setting one
    sets it where it lives (``train_time`` and ``smoothed_loss`` always on the wrapped
    stats). Once constructed, a wrapper takes no new attributes (``AttributeError``), so a
    misspelt field is an error rather than a silent new one. A subclass sets its own fields
    first and calls ``super().__init__(wrapped_stats)`` last.

    :param wrapped_stats: the stats to wrap.

    >>> class WithBonus(TrainingStatsWrapper):
    ...     def __init__(self, wrapped_stats, bonus):
    ...         self.bonus = bonus
    ...         super().__init__(wrapped_stats)
    >>> inner = TrainingStats(train_time=1.0); inner.loss = 0.5
    >>> s = WithBonus(inner, bonus=0.1)
    >>> s.loss, s.train_time, s.get_loss_stats_dict()
    (0.5, 1.0, {'loss': 0.5, 'bonus': 0.1})
    >>> s.loss = 0.25; inner.loss
    0.25
    """

    train_time = _wrapped_field("train_time")  # type: ignore[assignment]
    smoothed_loss = _wrapped_field("smoothed_loss")  # type: ignore[assignment]

    def __init__(
        self, wrapped_stats: TrainingStats
    ) -> None:  # no super().__init__: fields live in wrapped_stats
        object.__setattr__(self, "_wrapped_stats", wrapped_stats)
        object.__setattr__(self, "_sealed", True)

    @property
    def wrapped_stats(self) -> TrainingStats:
        """The wrapped stats."""
        return self.__dict__["_wrapped_stats"]  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__.get("_wrapped_stats")
        if name.startswith("_") or wrapped is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not self.__dict__.get("_sealed") or name in self.__dict__:
            object.__setattr__(self, name, value)
        elif isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)  # runs the property's setter
        elif hasattr(self.wrapped_stats, name):
            setattr(self.wrapped_stats, name, value)
        else:
            raise AttributeError(
                f"{type(self).__name__}: no field {name!r} to set (a wrapper takes no new "
                f"attributes after construction; set them before super().__init__)"
            )

    def _stat_attributes(self) -> dict[str, Any]:
        own = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return {**self.wrapped_stats._stat_attributes(), **own}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._stat_attributes()!r})"
