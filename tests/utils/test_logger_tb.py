"""TensorboardLogger: event files read back, resume through the sidecar and the events."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorboard")

from tdrl.utils.logger import TensorboardLogger
from tdrl.utils.logger.base import RESUME_FILE
from tdrl.utils.logger.tensorboard import read_tensorboard_scalars


def test_tensorboard_events_and_restore(tmp_path) -> None:
    log = TensorboardLogger(str(tmp_path), train_interval=1, update_interval=1)
    log.log_train_data({"returns_stat": {"mean": 1.5}}, 100)
    log.log_train_data({"returns_stat": {"mean": 2.5}}, 200)
    log.log_update_data({"loss": 0.25}, 7)
    log.save_data(1, 200, 7)
    log.save_data(2, 400, 15)
    log.finalize()
    scalars = read_tensorboard_scalars(tmp_path)
    assert scalars["train/returns_stat/mean"] == [(100, 1.5), (200, 2.5)]
    assert scalars["train/env_step"] == [(100, 100.0), (200, 200.0)]
    assert scalars["update/loss"] == [(7, 0.25)]
    assert scalars["save/env_step"][-1] == (2, 400.0)

    assert TensorboardLogger(str(tmp_path)).restore_data() == (2, 400, 15)
    (tmp_path / RESUME_FILE).unlink()  # fall back to the event files
    resumed = TensorboardLogger(str(tmp_path))
    assert resumed.restore_data() == (2, 400, 15)
    assert resumed.last_log_train_step == 400
    resumed.finalize()


def test_tensorboard_accepts_a_summary_writer(tmp_path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    log = TensorboardLogger(SummaryWriter(str(tmp_path)))
    assert log.restore_data() == (0, 0, 0)
    log.log_test_data({"r": 3.0}, 5)
    log.finalize()
    assert read_tensorboard_scalars(tmp_path)["test/r"] == [(5, 3.0)]
