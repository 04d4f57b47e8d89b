"""``CollectStats`` filled step by step and episode by episode, and ``distribution_std``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from tdrl.data import Batch, CollectStats, distribution_std


def test_categorical_std_is_that_of_the_action_index() -> None:
    probs = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.25, 0.5, 0.25]])
    std = distribution_std(Categorical(probs=probs))
    values = torch.arange(3.0)
    mean = (probs * values).sum(-1, keepdim=True)
    expected = ((probs * (values - mean) ** 2).sum(-1, keepdim=True)).sqrt()
    assert std.shape == (3, 1)
    assert torch.allclose(std, expected)
    assert std[:, 0].tolist() == pytest.approx([0.5, 0.0, 0.5**0.5])


def test_other_distributions_give_their_stddev() -> None:
    dist = Independent(Normal(torch.zeros(4, 2), torch.tensor([0.5, 2.0]).expand(4, 2)), 1)
    assert torch.equal(distribution_std(dist), dist.stddev)
    assert distribution_std(dist).shape == (4, 2)


def test_steps_counted_and_stds_stacked_per_step() -> None:
    stats = CollectStats()
    scale = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    step = Batch(obs=np.zeros((3, 5)), act=np.zeros((3, 2)), dist=Normal(torch.zeros(3, 2), scale))
    for _ in range(4):
        stats.update_at_step_batch(step)
    assert stats.n_collected_steps == 12
    assert stats.pred_dist_std_array is not None
    assert stats.pred_dist_std_array.shape == (12, 2)
    assert stats.pred_dist_std_array_stat is None  # only computed on refresh
    stats.refresh_all_sequence_stats()
    assert stats.pred_dist_std_array_stat is not None
    assert stats.pred_dist_std_array_stat[0].mean == pytest.approx(3.0)
    assert stats.pred_dist_std_array_stat[1].max == pytest.approx(6.0)


def test_categorical_step_batch_gives_one_column() -> None:
    stats = CollectStats()
    step = Batch(
        obs=np.zeros((2, 3)), dist=Categorical(probs=torch.tensor([[0.5, 0.5], [1.0, 0.0]]))
    )
    stats.update_at_step_batch(step, refresh_sequence_stats=True)
    assert stats.pred_dist_std_array is not None
    assert stats.pred_dist_std_array[:, 0].tolist() == pytest.approx([0.5, 0.0])
    assert stats.pred_dist_std_array_stat is not None
    assert list(stats.pred_dist_std_array_stat) == [0]


def test_a_step_without_distribution_only_counts() -> None:
    stats = CollectStats()
    stats.update_at_step_batch(Batch(obs=np.zeros((4, 1))), refresh_sequence_stats=True)
    assert stats.n_collected_steps == 4
    assert stats.pred_dist_std_array is None and stats.pred_dist_std_array_stat is None


def test_unbatched_distribution_in_a_one_step_batch() -> None:
    step = Batch(
        obs=np.array([1, 2, 3]), dist=Normal(torch.zeros(3), torch.ones(3))
    ).to_at_least_2d()
    stats = CollectStats()
    stats.update_at_step_batch(step)
    assert stats.n_collected_steps == 1
    assert stats.pred_dist_std_array is not None and stats.pred_dist_std_array.shape == (1, 3)


def test_episodes_time_and_summaries() -> None:
    stats = CollectStats()
    for length, ret in [(3, 1.0), (5, 3.0)]:
        stats.update_at_step_batch(Batch(obs=np.zeros((length, 1))))
        stats.update_at_episode_done(Batch(obs=np.zeros((length, 1))), ret)
    assert stats.returns_stat is None
    stats.refresh_all_sequence_stats()
    assert stats.n_collected_episodes == 2
    assert stats.lens.tolist() == [3, 5] and stats.lens.dtype == np.int64
    assert stats.returns.tolist() == [1.0, 3.0]
    assert stats.returns_stat is not None and stats.returns_stat.mean == 2.0
    assert stats.lens_stat is not None and stats.lens_stat.max == 5.0
    stats.set_collect_time(2.0)
    assert (stats.collect_time, stats.collect_speed) == (2.0, 4.0)
    stats.set_collect_time(0.0)
    assert stats.collect_speed == 0.0
    stats.set_collect_time(8.0, update_collect_speed=False)
    assert stats.collect_speed == 0.0
    with pytest.raises(ValueError, match="collect_time"):
        stats.set_collect_time(-1.0)


def test_incremental_stats_agree_with_from_episodes() -> None:
    returns, lens = np.array([2.0, -1.0, 4.0]), np.array([2, 7, 1])
    built = CollectStats.from_episodes(returns, lens, n_steps=10, collect_time=0.5)
    filled = CollectStats()
    for r, n in zip(returns, lens):
        filled.update_at_episode_done(Batch(obs=np.zeros((n, 1))), float(r), True)
    filled.n_collected_steps = 10
    filled.set_collect_time(0.5)
    assert filled.returns_stat == built.returns_stat and filled.lens_stat == built.lens_stat
    assert (filled.n_collected_episodes, filled.collect_speed) == (3, built.collect_speed)
