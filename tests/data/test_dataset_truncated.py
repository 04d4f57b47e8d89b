"""A truncated HDF5 file given as ``--dataset`` passes ``h5py.is_hdf5`` but cannot be read:
a one-line ``DatasetError`` naming the file, exit 2 on the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from tdrl.cli.main import main  # noqa: E402
from tdrl.data.datasets import DatasetError, load_hdf5_dataset  # noqa: E402


def _dataset(path: Path, n: int = 4000) -> Path:
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f["obs"] = rng.standard_normal((n, 3)).astype(np.float32)
        f["obs_next"] = rng.standard_normal((n, 3)).astype(np.float32)
        f["act"] = rng.uniform(-2, 2, (n, 1)).astype(np.float32)
        f["rew"] = rng.standard_normal(n).astype(np.float32)
        f["terminated"] = np.zeros(n, dtype=bool)
        f["truncated"] = (np.arange(n) % 200) == 199
    return path


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.99])
def test_truncated_hdf5_is_a_dataset_error_naming_the_file(tmp_path: Path, keep: float) -> None:
    path = _dataset(tmp_path / "d.hdf5")
    assert len(load_hdf5_dataset(path)) == 4000
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])
    assert h5py.is_hdf5(path)
    with pytest.raises(DatasetError, match=rf"^--dataset {path}: expected a readable HDF5") as e:
        load_hdf5_dataset(path)
    assert "\n" not in str(e.value)


def test_cli_truncated_dataset_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _dataset(tmp_path / "d.hdf5")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    argv = ["train", "bc", "Pendulum-v1", "--dataset", str(path), "--epochs", "1"]
    argv += [
        "--step-per-epoch",
        "10",
        "--no-progress",
        "--no-plot",
        "--logdir",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0], err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
