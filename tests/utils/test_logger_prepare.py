"""``BaseLogger.prepare_dict_for_logging``: nested data to flat, loggable ``{key: value}``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tdrl.utils.logger import BaseLogger, CSVLogger, LazyLogger, TensorboardLogger


@dataclasses.dataclass
class Stat:
    mean: float
    name: str


def test_nesting_of_dicts_and_dataclasses_and_prefix() -> None:
    data = {"loss": {"actor": 0.5, "critic": {"q1": 2, "q2": np.float32(3.0)}}, "s": Stat(1.0, "x")}
    out = LazyLogger().prepare_dict_for_logging(data, parent_key="update")
    assert out == {
        "update/loss/actor": 0.5,
        "update/loss/critic/q1": 2.0,
        "update/loss/critic/q2": 3.0,
        "update/s/mean": 1.0,
    }
    assert all(type(v) is float for v in out.values())


@pytest.mark.parametrize("delimiter", [".", "|", "::"])
def test_delimiter_joins_every_level(delimiter: str) -> None:
    out = LazyLogger().prepare_dict_for_logging({"a": {"b": {"c": 1}}, "d": 2}, delimiter=delimiter)
    assert out == {f"a{delimiter}b{delimiter}c": 1.0, "d": 2.0}


def test_arrays_dropped_by_default_and_kept_on_request() -> None:
    data = {
        "v": np.arange(4.0),
        "t": torch.ones(2, 2),
        "one": np.array([7]),
        "n": {"w": np.zeros(3)},
    }
    dropped = LazyLogger().prepare_dict_for_logging(data)
    assert dropped == {"one": 7.0}
    kept = LazyLogger().prepare_dict_for_logging(data, exclude_arrays=False)
    assert set(kept) == {"v", "t", "one", "n/w"}
    assert isinstance(kept["t"], np.ndarray) and kept["t"].shape == (2, 2)
    np.testing.assert_array_equal(kept["v"], np.arange(4.0))
    assert kept["one"] == 7.0


def test_values_that_cannot_be_logged_are_dropped() -> None:
    data = {"s": "text", "t": (1, 2), "none": None, "obj": object(), "objarr": np.array([None, 1])}
    assert LazyLogger().prepare_dict_for_logging(data, exclude_arrays=False) == {}


def test_what_the_log_methods_write_is_the_same_flattening() -> None:
    class Recorder(BaseLogger):
        def __init__(self) -> None:
            super().__init__(train_interval=0)
            self.rows: list[dict[str, float]] = []

        def write(self, scope: str, step: int, data: dict[str, float]) -> None:
            self.rows.append(data)

    data = {"returns_stat": {"mean": 1.5, "all": np.arange(3)}, "n": 3}
    rec = Recorder()
    rec.log_train_data(data, step=1)
    assert rec.rows == [rec.prepare_dict_for_logging(data, parent_key="train")]


@pytest.mark.parametrize("make", ["csv", "tensorboard"])
def test_every_logger_has_it(make: str, tmp_path: object) -> None:
    logger = CSVLogger(str(tmp_path)) if make == "csv" else TensorboardLogger(str(tmp_path))
    try:
        assert logger.prepare_dict_for_logging({"a": {"b": 1}}) == {"a/b": 1.0}
    finally:
        logger.finalize()
