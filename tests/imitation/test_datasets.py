"""Datasets: HDF5 (tdrl, Tianshou and flat layouts) and Minari round trips, bad specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tdrl.data.buffer import ReplayBuffer, VectorReplayBuffer
from tdrl.data.datasets import (
    DatasetError,
    describe,
    episode_slices,
    export_minari,
    load_dataset,
)
from tdrl.registry import PresetError


def _rows(buf: ReplayBuffer) -> dict[str, np.ndarray]:
    idx = np.asarray(buf.sample_indices(0))
    b = buf[idx]
    return {
        k: np.asarray(getattr(b, k))
        for k in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next")
    }


def _vector_buffer() -> VectorReplayBuffer:
    """Two sub-buffers, episodes of 3 and 4 steps, the last of each open."""
    from tdrl.data.batch import Batch

    buf = VectorReplayBuffer(20, 2)
    for t in range(7):
        buf.add(
            Batch(
                obs=np.array([[t, 0.0], [t, 1.0]], dtype=np.float32),
                act=np.array([t % 2, (t + 1) % 2]),
                rew=np.array([1.0 * t, 2.0 * t]),
                terminated=np.array([t == 2, False]),
                truncated=np.array([False, t == 3]),
                obs_next=np.array([[t + 1, 0.0], [t + 1, 1.0]], dtype=np.float32),
            )
        )
    return buf


def test_tdrl_hdf5_round_trip_keeps_class_and_bookkeeping(tmp_path: Path) -> None:
    buf = _vector_buffer()
    buf.save_hdf5(tmp_path / "b.hdf5")
    back = load_dataset(str(tmp_path / "b.hdf5"))
    assert type(back) is VectorReplayBuffer
    assert len(back) == len(buf) == 14
    for k, v in _rows(buf).items():
        np.testing.assert_array_equal(_rows(back)[k], v)
    np.testing.assert_array_equal(back.unfinished_index(), buf.unfinished_index())
    idx = buf.sample_indices(0)
    np.testing.assert_array_equal(back.next(idx), buf.next(idx))


def test_flat_and_d4rl_layouts(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    n = 6
    term = np.array([0, 0, 1, 0, 0, 0], bool)
    trunc = np.array([0, 0, 0, 0, 1, 0], bool)
    with h5py.File(tmp_path / "flat.hdf5", "w") as f:
        f["obs"], f["act"], f["rew"] = np.arange(n * 2.0).reshape(n, 2), np.arange(n), np.ones(n)
        f["terminated"], f["truncated"] = term, trunc
        f["obs_next"] = np.arange(n * 2.0).reshape(n, 2) + 2
    with h5py.File(tmp_path / "d4rl.hdf5", "w") as f:
        f["observations"], f["actions"] = np.arange(n * 2.0).reshape(n, 2), np.arange(n)
        f["rewards"], f["terminals"], f["timeouts"] = np.ones(n), term, trunc
        f["next_observations"] = np.arange(n * 2.0).reshape(n, 2) + 2
    for name in ("flat.hdf5", "d4rl.hdf5"):
        buf = load_dataset(str(tmp_path / name))
        rows = _rows(buf)
        np.testing.assert_array_equal(rows["terminated"], term)
        np.testing.assert_array_equal(rows["truncated"], trunc)
        np.testing.assert_array_equal(rows["done"], term | trunc)
        assert buf.unfinished_index().tolist() == [5]
        assert buf.next(np.arange(6)).tolist() == [1, 2, 2, 4, 4, 5]


def test_flat_layout_with_done_only_counts_done_as_terminated(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "f.hdf5", "w") as f:
        f["obs"], f["act"], f["rew"] = np.zeros((3, 1)), np.zeros(3), np.ones(3)
        f["done"], f["obs_next"] = np.array([0, 1, 0], bool), np.zeros((3, 1))
    rows = _rows(load_dataset(str(tmp_path / "f.hdf5")))
    assert rows["terminated"].tolist() == [False, True, False]
    assert not rows["truncated"].any()


def test_tianshou_vector_buffer_file(tmp_path: Path) -> None:
    ts = pytest.importorskip("tianshou")
    from tianshou.data import Batch as TsBatch
    from tianshou.data import VectorReplayBuffer as TsVector

    ts_buf = TsVector(8, 2)  # sub-buffers of 4: the first one wraps around
    for t in range(6):
        ts_buf.add(
            TsBatch(
                obs=np.array([[t], [10 + t]], dtype=np.float32),
                act=np.array([t, t]),
                rew=np.array([t, 10.0 + t]),
                terminated=np.array([t == 3, t == 1]),
                truncated=np.array([False, False]),
                obs_next=np.array([[t + 1], [11 + t]], dtype=np.float32),
                info={},
            )
        )
    ts_buf.save_hdf5(str(tmp_path / "ts.hdf5"))
    assert ts.__version__.startswith("2.")
    buf = load_dataset(str(tmp_path / "ts.hdf5"))
    rows = _rows(buf)
    # sub-buffer 0 keeps steps 2..5 (chronological), sub-buffer 1 steps 12..15
    assert rows["obs"].reshape(-1).tolist() == [2, 3, 4, 5, 12, 13, 14, 15]
    assert rows["terminated"].tolist() == [False, True, False, False] + [False] * 4
    # sub-buffer 0's open episode ends where its rows end: truncated, chain cut there
    assert rows["truncated"].tolist() == [False, False, False, True] + [False] * 4
    assert buf.unfinished_index().tolist() == [7]
    np.testing.assert_array_equal(rows["obs_next"].reshape(-1), rows["obs"].reshape(-1) + 1)


def test_minari_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    n = 9
    obs = np.arange(n * 3, dtype=np.float32).reshape(n, 3) / 30
    term = np.array([0, 0, 1, 0, 0, 0, 0, 0, 0], bool)
    trunc = np.array([0, 0, 0, 0, 0, 1, 0, 0, 0], bool)
    obs_next = np.concatenate([obs[1:], obs[-1:] + 0.5])
    act = np.linspace(-1, 1, n, dtype=np.float32).reshape(n, 1)
    buf = ReplayBuffer.from_data(obs, act, np.arange(n, dtype=np.float64), term, trunc,
                                 term | trunc, obs_next)  # fmt: skip
    path = export_minari(buf, "tdrl/pendulum/test-v0", "Pendulum-v1", algorithm_name="sac")
    assert path.exists()
    back = load_dataset("minari:tdrl/pendulum/test-v0")
    a, b = _rows(buf), _rows(back)
    for k in a:
        np.testing.assert_allclose(b[k], a[k], err_msg=k)
    assert back.unfinished_index().tolist() == buf.unfinished_index().tolist() == [8]
    import minari

    ds = minari.load_dataset("tdrl/pendulum/test-v0")
    assert ds.total_episodes == 3 and ds.total_steps == n
    # Minari holds the env's actions (Pendulum: [-2, 2]); tdrl's buffer the raw [-1, 1] ones
    stored = np.concatenate([np.asarray(e.actions) for e in ds.iterate_episodes()])
    np.testing.assert_allclose(stored, 2.0 * act, rtol=1e-6)
    assert ds.spec.env_spec is not None and ds.spec.env_spec.id == "Pendulum-v1"
    with pytest.raises(DatasetError, match="exists"):
        export_minari(buf, "tdrl/pendulum/test-v0", "Pendulum-v1")
    export_minari(buf, "tdrl/pendulum/test-v0", "Pendulum-v1", overwrite=True)


def test_minari_vector_buffer_episodes_split_per_sub_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    buf = _vector_buffer()
    assert [len(e) for e in episode_slices(buf)] == [3, 4, 4, 3]
    export_minari(buf, "tdrl/toy/vec-v0", "Pendulum-v1")
    back = load_dataset("minari:tdrl/toy/vec-v0")
    rows = _rows(back)
    assert len(back) == 14
    # the open episode of sub-buffer 0 (steps 3..6) is cut by a truncation on loading
    assert rows["truncated"].tolist() == [False] * 6 + [True] + [False] * 3 + [True] + [False] * 3
    assert back.unfinished_index().tolist() == [13]


def test_describe_counts_finished_episodes() -> None:
    d = describe(_vector_buffer())
    assert d["transitions"] == 14 and d["episodes"] == 2
    assert d["mean_return"] == pytest.approx(((0 + 1 + 2) + 2 * (0 + 1 + 2 + 3)) / 2)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: str(p / "missing.hdf5"), "no such file"),
        (lambda p: str(p), "got a directory"),
        (lambda p: (p / "x.txt").write_text("hi") and str(p / "x.txt"), "expected an HDF5 file"),
        (lambda p: "minari:nope/none-v0", "no such Minari dataset"),
        (lambda p: "minari:", "expected a dataset name"),
    ],
)
def test_bad_specs_are_one_line_dataset_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make, match
) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    spec = make(tmp_path)
    if spec.startswith("minari:"):
        pytest.importorskip("minari")
    with pytest.raises(DatasetError, match=match) as info:
        load_dataset(spec)
    assert isinstance(info.value, PresetError) and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_missing_keys_are_named(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "k.hdf5", "w") as f:
        f["obs"], f["rew"] = np.zeros((3, 1)), np.zeros(3)
    with pytest.raises(DatasetError, match=r"missing key\(s\) act, obs_next"):
        load_dataset(str(tmp_path / "k.hdf5"))
    with h5py.File(tmp_path / "k2.hdf5", "w") as f:
        f["obs"], f["act"], f["rew"], f["obs_next"] = (np.zeros(3),) * 4
    with pytest.raises(DatasetError, match=r"missing key\(s\) terminated"):
        load_dataset(str(tmp_path / "k2.hdf5"))
    with h5py.File(tmp_path / "k3.hdf5", "w") as f:
        f["obs"], f["act"], f["obs_next"] = (np.zeros(3),) * 3
        f["rew"], f["done"] = np.zeros(2), np.zeros(3, bool)
    with pytest.raises(DatasetError, match="expected 2 rows"):
        load_dataset(str(tmp_path / "k3.hdf5"))


def test_cli_maps_dataset_errors_to_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tdrl.cli.args import is_user_error

    assert is_user_error(DatasetError("--dataset x: bad"))


def test_train_from_a_minari_dataset_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tdrl train bc Pendulum-v1 --dataset minari:NAME`` on a locally exported dataset."""
    pytest.importorskip("minari")
    from tdrl.cli import main

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    rng = np.random.default_rng(0)
    n = 400  # two Pendulum episodes of random raw actions
    obs = rng.uniform(-1, 1, size=(n + 1, 3)).astype(np.float32)
    trunc = np.zeros(n, bool)
    trunc[[199, 399]] = True
    z = np.zeros(n, bool)
    act = rng.uniform(-1, 1, size=(n, 1)).astype(np.float32)
    buf = ReplayBuffer.from_data(obs[:-1], act, rng.normal(size=n), z, trunc, trunc, obs[1:])
    export_minari(buf, "tdrl/pendulum/random-v0", "Pendulum-v1")
    argv = ["train", "bc", "Pendulum-v1", "--dataset", "minari:tdrl/pendulum/random-v0"]
    argv += ["--epochs", "1", "--step-per-epoch", "5", "--test-num", "1", "--logger", "none"]
    argv += ["--no-progress", "--no-plot", "--logdir", str(tmp_path / "runs")]
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("bc on Pendulum-v1: best test return ") and "5 gradient steps" in last
