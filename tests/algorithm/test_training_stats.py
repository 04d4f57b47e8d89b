"""``TrainingStats`` / ``TrainingStatsWrapper``: typed update statistics (Tianshou's form)."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from tdrl.algorithm import TrainingStats, TrainingStatsWrapper
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data import SequenceSummaryStats


class ICMStats(TrainingStatsWrapper):
    def __init__(self, wrapped_stats: TrainingStats, icm_loss: float) -> None:
        self.icm_loss = icm_loss
        super().__init__(wrapped_stats)


def _inner() -> TrainingStats:
    stats = TrainingStats(train_time=0.5)
    stats.loss_actor = 1.0  # type: ignore[attr-defined]
    stats.loss_critic = SequenceSummaryStats.from_sequence([1.0, 3.0])  # type: ignore[attr-defined]
    stats.skip = None  # type: ignore[attr-defined]
    return stats


def test_loss_dict_leaves_out_time_smoothing_none_and_private() -> None:
    stats = _inner()
    stats._cache = 3  # type: ignore[attr-defined]
    stats.smoothed_loss["loss_actor"] = 0.9
    assert stats.get_loss_stats_dict() == {"loss_actor": 1.0, "loss_critic": 2.0}


def test_from_mapping_reads_update_stats() -> None:
    update = UpdateStats([("loss_q", torch.tensor(0.25)), ("alpha", torch.tensor(0.5))])
    stats = TrainingStats.from_mapping(update, train_time=2.0)
    assert stats.train_time == 2.0
    assert stats.get_loss_stats_dict() == {"loss_q": 0.25, "alpha": 0.5, "loss": 0.25}


def test_wrapper_reads_through_and_merges_its_own_fields() -> None:
    inner = _inner()
    stats = ICMStats(inner, icm_loss=0.1)
    assert stats.wrapped_stats is inner
    assert stats.loss_actor == 1.0 and stats.train_time == 0.5
    assert stats.get_loss_stats_dict() == {"loss_actor": 1.0, "loss_critic": 2.0, "icm_loss": 0.1}
    assert isinstance(stats, TrainingStats)


def test_writes_go_where_the_field_lives() -> None:
    inner = _inner()
    stats = ICMStats(inner, icm_loss=0.1)
    stats.train_time = 4.0
    stats.smoothed_loss["x"] = 1.0
    stats.loss_actor = 7.0
    stats.icm_loss = 0.2
    assert inner.train_time == 4.0 and inner.smoothed_loss == {"x": 1.0}
    assert inner.loss_actor == 7.0  # type: ignore[attr-defined]
    assert stats.icm_loss == 0.2 and not hasattr(inner, "icm_loss")
    stats.smoothed_loss = {"y": 2.0}
    assert inner.smoothed_loss == {"y": 2.0}


def test_new_attributes_after_construction_are_refused() -> None:
    stats = ICMStats(_inner(), icm_loss=0.1)
    with pytest.raises(AttributeError, match="icm_los"):
        stats.icm_los = 0.3  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = stats.nothing_here  # type: ignore[attr-defined]


def test_wrappers_nest_and_copy() -> None:
    class Outer(TrainingStatsWrapper):
        def __init__(self, wrapped_stats: TrainingStats) -> None:
            self.extra = 5
            super().__init__(wrapped_stats)

    stats = Outer(ICMStats(_inner(), icm_loss=0.1))
    assert stats.loss_actor == 1.0 and stats.icm_loss == 0.1
    assert set(stats.get_loss_stats_dict()) == {"loss_actor", "loss_critic", "icm_loss", "extra"}
    stats.loss_actor = 3.0
    assert stats.wrapped_stats.wrapped_stats.loss_actor == 3.0  # type: ignore[attr-defined]
    clone = copy.deepcopy(stats)
    assert clone.get_loss_stats_dict() == stats.get_loss_stats_dict()
    restored = pickle.loads(pickle.dumps(ICMStats(_inner(), icm_loss=0.1)))
    assert restored.icm_loss == 0.1 and restored.loss_actor == 1.0
