"""Tests for tdrl.utils.logger: flattening, intervals, console, CSV and the no-op logger."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.utils.logger import (
    BaseLogger,
    ConsoleLogger,
    CSVLogger,
    LazyLogger,
    flatten_scalars,
    read_csv_log,
)


@dataclasses.dataclass
class Summary:
    mean: float
    std: float
    values: np.ndarray


@dataclasses.dataclass
class Stats:
    n_collected_steps: int
    returns_stat: Summary | None
    label: str = "x"


class Recorder(BaseLogger):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: list[tuple[str, int, dict[str, float]]] = []

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        self.rows.append((scope, step, data))


def test_flatten_nested_dataclass_tensordict() -> None:
    stats = Stats(10, Summary(1.5, 0.5, np.arange(4)))
    td = TensorDict({"loss": torch.tensor(0.25), "vec": torch.zeros(3)}, batch_size=[])
    data = {
        "stats": stats,
        "td": td,
        "np0d": np.array(2.0),
        "one": np.array([3]),
        "flag": True,
        "none": None,
        ("a", "b"): 1,
    }
    out = flatten_scalars(data, prefix="train")
    assert out == {
        "train/stats/n_collected_steps": 10.0,
        "train/stats/returns_stat/mean": 1.5,
        "train/stats/returns_stat/std": 0.5,
        "train/td/loss": 0.25,
        "train/np0d": 2.0,
        "train/one": 3.0,
        "train/flag": 1.0,
        "train/a/b": 1.0,
    }
    assert flatten_scalars(Stats(3, None)) == {"n_collected_steps": 3.0}
    assert flatten_scalars(5.0) == {}  # a bare scalar has no key


def test_intervals_are_per_scope() -> None:
    log = Recorder(train_interval=100, update_interval=10, test_interval=1)
    for step in range(0, 301, 50):
        log.log_train_data({"r": step}, step)
    # Tianshou's rule: write when step - last >= interval, with last = -1 at the start
    assert [s for sc, s, _ in log.rows if sc == "train"] == [100, 200, 300]
    for g in range(25):
        log.log_update_data({"loss": 1.0}, g)
    assert [s for sc, s, _ in log.rows if sc == "update"] == [9, 19]
    log.log_test_data({"r": 1}, 0)
    log.log_test_data({"r": 1}, 0)  # same step again: below the interval
    log.log_info_data({"lr": 1e-3}, 1)
    assert [(sc, s) for sc, s, _ in log.rows if sc in ("test", "info")] == [
        ("test", 0),
        ("info", 1),
    ]
    assert log.rows[0][2] == {"train/r": 100.0}
    log.log_training_data({"r": 1}, 1000)  # Tianshou's name
    assert log.rows[-1][:2] == ("train", 1000)


def test_save_data_interval_and_checkpoint_fn() -> None:
    log = Recorder(save_interval=2)
    calls = []
    for epoch in range(1, 6):
        log.save_data(epoch, epoch * 100, epoch * 10, lambda e, s, g: calls.append((e, s, g)))
    assert calls == [(1, 100, 10), (3, 300, 30), (5, 500, 50)]
    assert log.rows[-1] == ("save", 5, {"save/env_step": 500.0, "save/gradient_step": 50.0})
    never = Recorder(save_interval=None)
    never.save_data(1, 1, 1, lambda *a: calls.append(a))
    assert not never.rows and len(calls) == 3
    assert log.restore_data() == (0, 0, 0)


def test_console_logger_lines() -> None:
    lines: list[str] = []
    log = ConsoleLogger(print_fn=lines.append, update_interval=1, keys=["loss"], digits=3)
    log.log_update_data({"loss": 0.123456, "lr": 0.1, "loss_v": 2}, 7)
    assert lines == ["[update] gradient_step=7 loss=0.123 loss_v=2"]
    ConsoleLogger(print_fn=lines.append).save_data(3, 30, 4)
    assert lines[-1] == "[save] epoch=3 env_step=30 gradient_step=4"


def test_csv_round_trip_and_growing_header(tmp_path) -> None:
    log = CSVLogger(tmp_path, train_interval=1, update_interval=1)
    log.log_train_data({"returns_stat": {"mean": 1.0}}, 10)
    log.log_train_data({"returns_stat": {"mean": 2.0, "std": 0.5}}, 20)  # new column
    log.log_train_data({"returns_stat": {"mean": 3.0}}, 30)  # missing cell
    cols = read_csv_log(tmp_path / "train.csv")
    assert list(cols) == ["env_step", "train/returns_stat/mean", "train/returns_stat/std"]
    assert cols["env_step"] == [10.0, 20.0, 30.0]
    assert cols["train/returns_stat/mean"] == [1.0, 2.0, 3.0]
    std = cols["train/returns_stat/std"]
    assert math.isnan(std[0]) and std[1] == 0.5 and math.isnan(std[2])
    log.log_update_data({"loss": 0.5}, 0)
    assert read_csv_log(tmp_path / "update.csv") == {"gradient_step": [0.0], "update/loss": [0.5]}


def test_csv_restore_resumes_counters_and_appends(tmp_path) -> None:
    log = CSVLogger(tmp_path, test_interval=1)
    assert log.restore_data() == (0, 0, 0)
    log.log_test_data({"r": 1.0}, 100)
    log.save_data(1, 100, 5)
    log.log_test_data({"r": 2.0}, 200)
    log.save_data(2, 200, 9)
    log.finalize()
    resumed = CSVLogger(tmp_path, test_interval=1)
    assert resumed.restore_data() == (2, 200, 9)
    assert resumed.last_log_test_step == 200 and resumed.last_log_update_step == 9
    resumed.log_test_data({"r": 2.5}, 200)  # not past the interval: skipped
    resumed.log_test_data({"r": 3.0}, 300)
    assert read_csv_log(tmp_path / "test.csv")["test/r"] == [1.0, 2.0, 3.0]


def test_lazy_logger_does_nothing(tmp_path) -> None:
    log = LazyLogger()
    log.log_train_data({"a": 1}, 10**6)
    log.log_test_data({"a": 1}, 1)
    log.log_update_data({"a": 1}, 1)
    log.save_data(1, 1, 1, None)
    log.finalize()
    assert log.restore_data() == (0, 0, 0)


def test_unknown_logger_name() -> None:
    import tdrl.utils.logger as logger_pkg

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        logger_pkg.Nope  # noqa: B018
