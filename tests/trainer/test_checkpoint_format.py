"""Checkpoint format 2: versioned, verified (zip CRC-32 and SHA-256 of the nested pickles),
buffers with their filled rows only; format-1 files (written before) still load."""

from __future__ import annotations

import pickle
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer
from tdrl.data.buffer.storage import EpisodeStorage
from tdrl.errors import CheckpointError
from tdrl.launch import ExperimentConfig, run_experiment
from tdrl.trainer.checkpoint import CHECKPOINT_FORMAT, read_checkpoint
from tdrl.utils.logger import read_csv_log


def _cfg(log_dir: Path, epochs: int, resume: bool = False, **preset: Any) -> ExperimentConfig:
    return ExperimentConfig(
        algo="dqn",
        task="CartPole-v1",
        seed=5,
        epochs=epochs,
        step_per_epoch=200,
        training_num=2,
        test_num=2,
        stop_reward=1e9,
        logger="csv",
        log_dir=str(log_dir),
        checkpoint=True,
        resume=resume,
        show_progress=False,
        plot=False,
        overrides=preset,
    )


@pytest.fixture(scope="module")
def one_epoch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of a one-epoch DQN run with a (format 2) checkpoint."""
    _, run_dir = run_experiment(_cfg(tmp_path_factory.mktemp("run"), epochs=1))
    return Path(run_dir)


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    out.mkdir()
    for f in run_dir.iterdir():
        if f.is_file():
            (out / f.name).write_bytes(f.read_bytes())
    return out


def _flip(path: Path, entry_suffix: str, where: float) -> None:
    """Flip one bit inside the data of the zip entry whose name ends with ``entry_suffix``."""
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith(entry_suffix))
    raw = bytearray(path.read_bytes())
    head = info.header_offset
    name_len = int.from_bytes(raw[head + 26 : head + 28], "little")
    extra_len = int.from_bytes(raw[head + 28 : head + 30], "little")
    start = head + 30 + name_len + extra_len
    raw[start + int(info.file_size * where)] ^= 0x10
    path.write_bytes(bytes(raw))


def test_checkpoint_is_format_2_with_digests_of_nested_pickles(one_epoch: Path) -> None:
    state = read_checkpoint(one_epoch / "checkpoint.pt")
    assert state["format"] == CHECKPOINT_FORMAT == 2
    assert "collectors/train_collector/buffer" in state["digests"]
    assert any(k.startswith("collectors/train_collector/envs/") for k in state["digests"])


@pytest.mark.parametrize(
    ("entry", "where"),
    [("data.pkl", 0.5), ("data.pkl", 0.9), ("data/0", 0.5), ("data/3", 0.1)],
)
def test_one_flipped_bit_is_a_checkpoint_error(
    one_epoch: Path, tmp_path: Path, entry: str, where: float
) -> None:
    path = _copy(one_epoch, tmp_path) / "checkpoint.pt"
    _flip(path, entry, where)
    with pytest.raises(CheckpointError, match=r"checkpoint .*checkpoint.pt: .*corrupt"):
        read_checkpoint(path)


def test_corrupt_nested_pickle_fails_its_digest(one_epoch: Path, tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    state = torch.load(one_epoch / "checkpoint.pt", weights_only=False)
    blob = bytearray(state["collectors"]["train_collector"]["buffer"])
    blob[len(blob) // 2] ^= 1
    state["collectors"]["train_collector"]["buffer"] = bytes(blob)
    torch.save(state, path)  # a valid zip file: only the digest can tell
    with pytest.raises(CheckpointError, match="collectors/train_collector/buffer"):
        read_checkpoint(path)


def test_newer_format_is_refused(one_epoch: Path, tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.pt"
    state = torch.load(one_epoch / "checkpoint.pt", weights_only=False)
    state["format"] = 99
    torch.save(state, path)
    with pytest.raises(CheckpointError, match="expected checkpoint format 1 or 2, got format 99"):
        read_checkpoint(path)


def test_cli_resume_from_flipped_checkpoint_exits_2_in_one_line(
    one_epoch: Path, tmp_path: Path
) -> None:
    run_dir = _copy(one_epoch, tmp_path)
    _flip(run_dir / "checkpoint.pt", "data.pkl", 0.7)
    before = sorted(p.name for p in run_dir.iterdir())
    proc = subprocess.run(
        [sys.executable, "-m", "tdrl.cli", "train", "--resume", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "checkpoint.pt" in lines[0] and "corrupt" in lines[0], lines
    assert sorted(p.name for p in run_dir.iterdir()) == before


def _as_format_1(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrite a format-2 checkpoint as the old code wrote it: no format entry, no digests,
    buffers pickled with every row."""
    state = torch.load(path, weights_only=False)
    del state["format"], state["digests"]
    with monkeypatch.context() as m:
        m.setattr(EpisodeStorage, "_keep_filled_rows", lambda self, state: None)
        for collector in state["collectors"].values():
            collector["buffer"] = pickle.dumps(pickle.loads(collector["buffer"]))
            assert b"_filled_rows" not in collector["buffer"]
    torch.save(state, path)


def test_format_1_checkpoint_resumes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full, full_dir = run_experiment(_cfg(tmp_path / "full", epochs=2))
    _, cut_dir = run_experiment(_cfg(tmp_path / "cut", epochs=1))
    _as_format_1(Path(cut_dir) / "checkpoint.pt", monkeypatch)
    assert "format" not in torch.load(Path(cut_dir) / "checkpoint.pt", weights_only=False)
    resumed, cut_dir = run_experiment(_cfg(tmp_path / "cut", epochs=2, resume=True))
    assert (resumed.env_step, resumed.gradient_step) == (full.env_step, full.gradient_step)
    a = torch.load(Path(full_dir) / "checkpoint.pt", weights_only=False)["algorithm"]
    b = torch.load(Path(cut_dir) / "checkpoint.pt", weights_only=False)["algorithm"]
    for k, v in a.items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(v, b[k]), k
    x = read_csv_log(Path(full_dir) / "test.csv")
    y = read_csv_log(Path(cut_dir) / "test.csv")
    for k in x:
        if "speed" not in k and "time" not in k:
            np.testing.assert_array_equal(np.array(x[k]), np.array(y[k]), err_msg=k)


def _fill(buf: Any, steps: int, n: int) -> None:
    rng = np.random.default_rng(0)
    for _ in range(steps):
        row = {
            "obs": rng.standard_normal((n, 17)).astype(np.float32),
            "act": rng.standard_normal((n, 6)).astype(np.float32),
            "rew": rng.standard_normal(n),
            "terminated": rng.random(n) < 0.1,
            "truncated": np.zeros(n, dtype=bool),
            "obs_next": rng.standard_normal((n, 17)).astype(np.float32),
        }
        if n == 1:  # one transition, no batch dimension
            buf.add({k: v[0] for k, v in row.items()})
        else:
            buf.add(row, buffer_ids=np.arange(n))


@pytest.mark.parametrize("rings", [1, 4])
def test_buffer_pickle_keeps_only_filled_rows(rings: int) -> None:
    buf: Any = VectorReplayBuffer(100_000, rings) if rings > 1 else ReplayBuffer(100_000)
    _fill(buf, 50, rings)
    column_bytes = sum(c.nbytes for c in buf._storage.columns.values())
    blob = pickle.dumps(buf)
    assert len(blob) < column_bytes / 4  # the columns are ~1 MB per 1000 rows ... here 50*n
    back = pickle.loads(blob)
    assert len(back) == len(buf) == 50 * rings
    for k, col in buf._storage.columns.items():
        assert torch.equal(col, back._storage.columns[k]), k
    torch.manual_seed(1)
    _, i = buf.sample(16)
    torch.manual_seed(1)
    _, j = back.sample(16)
    np.testing.assert_array_equal(i, j)
    _fill(back, 2, rings)  # still writable, numpy views rebuilt
    assert len(back) == 52 * rings


def test_full_buffer_and_old_buffer_pickles_still_load(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = ReplayBuffer(30)
    _fill(buf, 40, 1)  # wrapped around: every row filled, pickled as is
    back = pickle.loads(pickle.dumps(buf))
    for k, col in buf._storage.columns.items():
        assert torch.equal(col, back._storage.columns[k]), k
    part = ReplayBuffer(1000)
    _fill(part, 10, 1)
    with monkeypatch.context() as m:  # the format-1 pickle: every row
        m.setattr(EpisodeStorage, "_keep_filled_rows", lambda self, state: None)
        old = pickle.dumps(part)
    back = pickle.loads(old)
    assert len(back) == 10 and back._storage.columns[("obs",)].shape[0] == 1000
