"""Statistics returned by a collection run (Tianshou's ``CollectStats``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.distributions import Categorical, Distribution

__all__ = ["CollectStats", "SequenceSummaryStats", "distribution_std"]


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


def distribution_std(dist: Distribution) -> torch.Tensor:
    """The standard deviation of ``dist``: ``dist.stddev``, except for a ``Categorical``,
    whose std is that of its action index (values ``0..n-1``), shape ``[*batch_shape, 1]``
    (one std per distribution, of a one-dimensional action; torch defines none for it).

    >>> distribution_std(Categorical(probs=torch.tensor([0.5, 0.5]))).tolist()
    [0.5]
    >>> distribution_std(torch.distributions.Normal(torch.zeros(2), 3.0)).tolist()
    [3.0, 3.0]
    """
    if isinstance(dist, Categorical):
        probs = dist.probs
        values = torch.arange(probs.shape[-1], device=probs.device, dtype=probs.dtype)
        mean = (probs * values).sum(-1, keepdim=True)
        return ((probs * (values - mean) ** 2).sum(-1, keepdim=True)).sqrt()
    return dist.stddev


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.float64)


@dataclass
class CollectStats:
    """What one ``collect`` call gathered.

    ``returns`` and ``lens`` hold one entry per episode that *finished* during the call;
    ``returns_stat`` / ``lens_stat`` summarise them and are ``None`` when none finished.
    ``pred_dist_std_array`` holds the std of the policy's action distribution, one row per
    step that had one (``[steps, action_dim]``), and ``pred_dist_std_array_stat`` summarises
    each action dimension; both are ``None`` when no step had a distribution.

    Besides :meth:`from_episodes` (what tdrl's collectors build), the stats can be filled one
    step and one episode at a time, as Tianshou's collector does:
    :meth:`update_at_step_batch`, :meth:`update_at_episode_done`, :meth:`set_collect_time`,
    then :meth:`refresh_all_sequence_stats` for the summaries.

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
    pred_dist_std_array: np.ndarray | None = None
    pred_dist_std_array_stat: dict[int, SequenceSummaryStats] | None = None

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

    # -- filled step by step (Tianshou's incremental form) -------------------------------
    def update_at_step_batch(self, step_batch: Any, refresh_sequence_stats: bool = False) -> None:
        """Count the steps of one vector step (``len(step_batch)``, one per env; the number
        of observations when its entries share no batch dimension) and, when
        it has a ``dist`` (the policy's action distribution), append its std per step
        (:func:`distribution_std`) to :attr:`pred_dist_std_array`.

        >>> from tdrl.data.batch import Batch
        >>> s = CollectStats()
        >>> dist = torch.distributions.Normal(torch.zeros(2, 3), torch.ones(2, 3))
        >>> s.update_at_step_batch(Batch(obs=np.zeros((2, 4)), dist=dist))
        >>> s.update_at_step_batch(Batch(obs=np.zeros((2, 4)), dist=dist), True)
        >>> s.n_collected_steps, s.pred_dist_std_array.shape, s.pred_dist_std_array_stat[2].mean
        (4, (4, 3), 1.0)
        """
        try:
            n = len(step_batch)
        except TypeError:  # no common batch dim (an unbatched distribution): count the obs
            n = len(step_batch.obs)
        self.n_collected_steps += n
        dist = getattr(step_batch, "dist", None)
        if isinstance(dist, Distribution):
            std = distribution_std(dist).detach().cpu().numpy().astype(np.float64)
            per_step = std.ndim >= 1 and std.shape[0] == n and (std.ndim > 1 or n > 1)
            rows = std.reshape(n, -1) if per_step else std.reshape(1, -1)
            if self.pred_dist_std_array is None:
                self.pred_dist_std_array = rows
            else:
                self.pred_dist_std_array = np.concatenate((self.pred_dist_std_array, rows))
        if refresh_sequence_stats:
            self.refresh_std_array_stats()

    def update_at_episode_done(
        self, episode_batch: Any, episode_return: float, refresh_sequence_stats: bool = False
    ) -> None:
        """Record one finished episode: its length (``len(episode_batch)``) and return."""
        self.n_collected_episodes += 1
        self.lens = np.append(self.lens, np.int64(len(episode_batch)))
        self.returns = np.append(self.returns, np.float64(episode_return))
        if refresh_sequence_stats:
            self.refresh_return_stats()
            self.refresh_len_stats()

    def set_collect_time(self, collect_time: float, update_collect_speed: bool = True) -> None:
        """Set :attr:`collect_time` (seconds, not negative) and, by default, the speed
        (steps per second; 0 for a time of 0)."""
        if collect_time < 0:
            raise ValueError(f"collect_time: expected a time >= 0, got {collect_time}")
        self.collect_time = float(collect_time)
        if update_collect_speed:
            self.collect_speed = self.n_collected_steps / collect_time if collect_time else 0.0

    def refresh_return_stats(self) -> None:
        """Recompute :attr:`returns_stat` from :attr:`returns` (``None`` if empty)."""
        self.returns_stat = (
            SequenceSummaryStats.from_sequence(self.returns) if self.returns.size else None
        )

    def refresh_len_stats(self) -> None:
        """Recompute :attr:`lens_stat` from :attr:`lens` (``None`` if empty)."""
        self.lens_stat = SequenceSummaryStats.from_sequence(self.lens) if self.lens.size else None

    def refresh_std_array_stats(self) -> None:
        """Recompute :attr:`pred_dist_std_array_stat`: one summary per action dimension."""
        arr = self.pred_dist_std_array
        if arr is None or arr.size == 0:
            self.pred_dist_std_array_stat = None
            return
        self.pred_dist_std_array_stat = {
            dim: SequenceSummaryStats.from_sequence(arr[:, dim]) for dim in range(arr.shape[1])
        }

    def refresh_all_sequence_stats(self) -> None:
        """Recompute every summary (returns, lengths, distribution stds)."""
        self.refresh_return_stats()
        self.refresh_len_stats()
        self.refresh_std_array_stats()
