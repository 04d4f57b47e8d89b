"""Statistics returned by a collection run (Tianshou's ``CollectStats``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class SequenceSummaryStats:
    """Mean, std, max and min of a sequence of numbers.

    >>> SequenceSummaryStats.from_sequence([1.0, 2.0, 3.0]).mean
    2.0
    """

    mean: float
    std: float
    max: float
    min: float

    @classmethod
    def from_sequence(cls, values: np.ndarray | list[float]) -> SequenceSummaryStats:
        """Summarise a non-empty sequence of numbers."""
        arr = np.asarray(values, dtype=np.float64)
        if arr.size == 0:
            raise ValueError("cannot summarise an empty sequence")
        return cls(
            mean=float(arr.mean()), std=float(arr.std()), max=float(arr.max()), min=float(arr.min())
        )


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.float64)


@dataclass
class CollectStats:
    """What one ``collect`` call gathered.

    ``returns`` and ``lens`` hold one entry per episode that *finished* during the call;
    ``returns_stat`` / ``lens_stat`` summarise them and are ``None`` when none finished.

    >>> s = CollectStats.from_episodes(np.array([1.0, 3.0]), np.array([4, 6]), 10, 0.5)
    >>> s.n_collected_episodes, s.returns_stat.mean, s.collect_speed
    (2, 2.0, 20.0)
    """

    n_collected_episodes: int = 0
    n_collected_steps: int = 0
    collect_time: float = 0.0
    collect_speed: float = 0.0
    returns: np.ndarray = field(default_factory=_empty)
    returns_stat: SequenceSummaryStats | None = None
    lens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    lens_stat: SequenceSummaryStats | None = None

    @classmethod
    def from_episodes(
        cls, returns: np.ndarray, lens: np.ndarray, n_steps: int, collect_time: float
    ) -> CollectStats:
        """Build the stats from the finished episodes' returns and lengths."""
        returns = np.asarray(returns, dtype=np.float64)
        lens = np.asarray(lens, dtype=np.int64)
        return cls(
            n_collected_episodes=len(returns),
            n_collected_steps=int(n_steps),
            collect_time=float(collect_time),
            collect_speed=n_steps / collect_time if collect_time > 0 else 0.0,
            returns=returns,
            returns_stat=SequenceSummaryStats.from_sequence(returns) if len(returns) else None,
            lens=lens,
            lens_stat=SequenceSummaryStats.from_sequence(lens) if len(lens) else None,
        )
