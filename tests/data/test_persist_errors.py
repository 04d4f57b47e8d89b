"""Bad buffer files and arrays: ``load_hdf5``/``from_data`` name what is missing or
mis-shaped (issue 16), and ``persist.py`` no longer imports ``base.py`` (the import cycle)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tdrl.data.buffer import CachedReplayBuffer, ReplayBuffer, VectorReplayBuffer

h5py = pytest.importorskip("h5py")

N = 6


def _step(t: int) -> dict:
    return {
        "obs": np.full(2, t, np.float32),
        "act": np.int64(t % 2),
        "rew": float(t),
        "terminated": t % 3 == 2,
        "truncated": False,
        "obs_next": np.full(2, t + 1, np.float32),
    }


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    buf = ReplayBuffer(N, seed=0)
    for t in range(4):
        buf.add(_step(t))
    path = tmp_path / "buf.hdf5"
    buf.save_hdf5(path)
    return path


def _edit(path: Path, fn: Any) -> Path:
    with h5py.File(path, "a") as f:
        fn(f)
    return path


EDITS: dict[str, tuple[Any, str]] = {
    "missing rew": (
        lambda f: f["columns"].__delitem__("rew"),
        r"buf\.hdf5: columns/rew: missing; expected the required columns "
        r"\['obs', 'act', 'rew', 'terminated', 'truncated', 'done'\], got \['act', 'done', "
        r"'obs', 'obs_next', 'terminated', 'truncated'\]",
    ),
    "missing obs": (
        lambda f: f["columns"].__delitem__("obs"),
        r"buf\.hdf5: columns/obs: missing",
    ),
    "missing done": (
        lambda f: f["columns"].__delitem__("done"),
        r"buf\.hdf5: columns/done: missing",
    ),
    "short rew": (
        lambda f: (
            f["columns"].__delitem__("rew"),
            f["columns"].create_dataset("rew", data=np.zeros(N - 1)),
        ),
        r"buf\.hdf5: columns/rew: expected leading dimension 6 \(max_size\), got shape \(5,\)",
    ),
    "2-d terminated": (
        lambda f: (
            f["columns"].__delitem__("terminated"),
            f["columns"].create_dataset("terminated", data=np.zeros((N, 2), bool)),
        ),
        r"buf\.hdf5: columns/terminated: expected bool flags of shape \(6,\), got bool of "
        r"shape \(6, 2\)",
    ),
    "float done": (
        lambda f: (
            f["columns"].__delitem__("done"),
            f["columns"].create_dataset("done", data=np.zeros(N)),
        ),
        r"columns/done: expected bool flags of shape \(6,\), got float64",
    ),
    "integer rew": (
        lambda f: (
            f["columns"].__delitem__("rew"),
            f["columns"].create_dataset("rew", data=np.zeros(N, np.int64)),
        ),
        r"columns/rew: expected one float column, got \{'rew': 'int64'\}",
    ),
    "no columns group": (
        lambda f: f.__delitem__("columns"),
        r"buf\.hdf5: missing groups \['columns'\]; expected a buffer written by save_hdf5 "
        r"with groups \['columns', 'meta'\], got \['meta'\]",
    ),
    "no meta dataset": (
        lambda f: f["meta"].__delitem__("lengths"),
        r"buf\.hdf5:/meta: missing datasets \['lengths'\]",
    ),
    "no config": (
        lambda f: f.attrs.__delitem__("config"),
        r"buf\.hdf5: missing attributes \['config'\]",
    ),
    "bad config": (
        lambda f: f.attrs.__setitem__("config", "{not json"),
        r"buf\.hdf5: attribute config: expected JSON constructor arguments",
    ),
    "lengths beyond capacity": (
        lambda f: f["meta"]["lengths"].__setitem__(slice(None), [N + 1]),
        r"meta/lengths, meta/cursor: expected values in \[0, 6\] and \[0, 6\), got \[7\]",
    ),
    "meta per sub-buffer": (
        lambda f: (
            f["meta"].__delitem__("cursor"),
            f["meta"].create_dataset("cursor", data=np.zeros(2, np.int64)),
        ),
        r"meta/cursor: expected shape \(1, \.\.\.\) \(one entry per sub-buffer\), got \(2,\)",
    ),
    "a group as a column": (
        lambda f: f["columns"].create_group("extra"),
        r"buf\.hdf5:/columns/extra: expected a dataset \(one column\), got Group",
    ),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_load_hdf5_names_the_bad_part(saved: Path, case: str) -> None:
    edit, match = EDITS[case]
    _edit(saved, edit)
    with pytest.raises(ValueError, match=match):
        ReplayBuffer.load_hdf5(saved)


def test_load_hdf5_good_file_and_empty_buffer(saved: Path, tmp_path: Path) -> None:
    assert len(ReplayBuffer.load_hdf5(saved)) == 4
    empty = tmp_path / "empty.hdf5"
    VectorReplayBuffer(4, 2).save_hdf5(empty)  # never written: no columns at all
    assert len(VectorReplayBuffer.load_hdf5(empty)) == 0


def test_load_hdf5_of_a_cached_buffer_names_the_group(tmp_path: Path) -> None:
    buf = CachedReplayBuffer(ReplayBuffer(8), 2, 4)
    for t in range(3):
        step = {k: np.stack([v, v]) for k, v in _step(t).items()}
        buf.add(step)
    path = tmp_path / "cached.hdf5"
    buf.save_hdf5(path)
    _edit(path, lambda f: f["main"]["columns"].__delitem__("rew"))
    with pytest.raises(ValueError, match=r"cached\.hdf5:/main: columns/rew: missing"):
        CachedReplayBuffer.load_hdf5(path)


def _arrays(**over: Any) -> dict:
    z = np.zeros(N, bool)
    arrays = {
        "obs": np.arange(N),
        "act": np.arange(N),
        "rew": np.ones(N),
        "terminated": z,
        "truncated": z,
        "done": z,
        "obs_next": np.arange(1, N + 1),
    }
    arrays.update(over)
    return arrays


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"rew": None}, r"rew: expected an array \(one row per transition\), got None"),
        ({"obs": None}, r"obs: expected an array \(one row per transition\), got None"),
        ({"done": None}, r"done: expected an array \(one row per transition\), got None"),
        ({"obs": {}}, r"obs: expected an array \(one row per transition\), got an empty dict"),
        ({"rew": np.ones(N - 1)}, r"rew: expected length 6 \(= len\(obs\)\), got shape \(5,\)"),
        (
            {"terminated": np.zeros((N, 2), bool)},
            r"terminated: expected shape \(6,\) \(one flag per row\), got \(6, 2\)",
        ),
        ({"rew": {"a": np.ones(N)}}, r"rew: expected an array, got a nested mapping"),
        ({"act": np.int64(3)}, r"act: expected length 6 \(= len\(obs\)\), got shape \(\)"),
    ],
)
def test_from_data_names_the_bad_array(over: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ReplayBuffer.from_data(**_arrays(**over))


def test_from_data_accepts_column_flags() -> None:
    """Flags of shape ``(n, 1)`` (a column vector, as datasets often store them) load."""
    buf = ReplayBuffer.from_data(**_arrays(terminated=np.eye(N, 1, dtype=bool)))
    assert buf.terminated[:N].tolist() == [True] + [False] * (N - 1)


def test_persist_does_not_import_base() -> None:
    """``base.py`` imports ``persist.py``; ``persist.py`` imports neither ``base.py`` nor the
    package's ``__init__`` (no cycle, not even a function-level import)."""
    import tdrl.data.buffer.persist as persist

    tree = ast.parse(Path(persist.__file__).read_text())
    imported: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.append(node.module or "")
            imported.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.extend(a.name for a in node.names)
    assert "tdrl.data.buffer.base" not in imported
    assert not [
        m for m in imported if m.startswith(("tdrl.data.buffer.base", "tdrl.data.buffer.vector"))
    ]
    assert "tdrl.data.buffer" not in imported and "tdrl.data.buffer.persist" not in imported


def test_persist_imports_first_in_a_fresh_process(tmp_path: Path) -> None:
    """``persist`` imports first on its own, and a cached-buffer file (whose main buffer
    class ``persist`` resolves) round-trips in that process."""
    code = (
        "import tdrl.data.buffer.persist\n"
        "import numpy as np\n"
        "from tdrl.data.buffer import CachedReplayBuffer, ReplayBuffer\n"
        "b = CachedReplayBuffer(ReplayBuffer(4), 1, 2)\n"
        "b.add({'obs': np.zeros((1, 2)), 'act': np.zeros(1, int), 'rew': np.ones(1),\n"
        "       'terminated': np.ones(1, bool), 'truncated': np.zeros(1, bool)})\n"
        f"b.save_hdf5({str(tmp_path / 'c.hdf5')!r})\n"
        f"print(len(CachedReplayBuffer.load_hdf5({str(tmp_path / 'c.hdf5')!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
