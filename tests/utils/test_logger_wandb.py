"""WandbLogger: offline by default, no account, no network; the run holds the data."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("wandb")

from tdrl.utils.logger import WandbLogger
from tdrl.utils.logger.tensorboard import read_tensorboard_scalars
from tdrl.utils.logger.wandb import resolve_wandb_mode


def test_mode_resolution(monkeypatch) -> None:
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert resolve_wandb_mode() == "offline"
    assert resolve_wandb_mode("online") == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert resolve_wandb_mode() == "disabled"
    with pytest.raises(ValueError, match=r"mode: expected one of .* got 'sideways'"):
        resolve_wandb_mode("sideways")


def test_wandb_offline_run(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    log = WandbLogger(
        project="tdrl-test",
        dir=tmp_path,
        config={"lr": 1e-3},
        tensorboard_dir=tmp_path / "tb",
        test_interval=1,
    )
    assert log.mode == "offline"
    log.log_test_data({"returns_stat": {"mean": 123.25}}, 1000)
    log.log_update_data({"loss": 0.5}, 0)
    log.save_data(1, 1000, 3)
    log.finalize()
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    (record,) = runs[0].glob("run-*.wandb")
    # wandb's service may still be writing the offline record file after finish() returns
    deadline = time.monotonic() + 30
    while b"123.25" not in (raw := record.read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert b"test/returns_stat/mean" in raw and b"123.25" in raw
    assert b"test/env_step" in raw
    assert read_tensorboard_scalars(tmp_path / "tb")["test/returns_stat/mean"] == [(1000, 123.25)]
    assert WandbLogger.restore_data(log) == (1, 1000, 3)
