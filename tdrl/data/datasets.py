"""Datasets for offline and imitation learning: HDF5 replay buffers and Minari datasets.

``tdrl train ALGO TASK --dataset SPEC`` loads ``SPEC`` with :func:`load_dataset`:

* ``FILE.hdf5`` written by a tdrl buffer's ``save_hdf5`` (what ``tdrl gather`` writes): the
  buffer comes back exactly, class, episode bookkeeping and all;
* ``FILE.hdf5`` written by Tianshou's ``ReplayBuffer.save_hdf5`` (a ``_meta`` group): each
  sub-buffer is read in chronological order;
* ``FILE.hdf5`` holding flat arrays at its root, Tianshou's ``from_data`` layout (``obs``,
  ``act``, ``rew``, ``terminated``, ``truncated`` or ``done``, ``obs_next``) or D4RL's names
  (``observations``, ``actions``, ``rewards``, ``terminals``, ``timeouts``,
  ``next_observations``);
* ``minari:NAME``: a Minari dataset in the local Minari data directory
  (``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``), read through the ``minari``
  package; nothing is downloaded.

Episodes that stop without a terminal or time-limit flag in the middle of a dataset
(the open episode of each sub-buffer of a Tianshou vector buffer, or a Minari episode cut
by the end of collection) are marked ``truncated``: their chain of returns is cut there and
their last step still bootstraps from ``V(s')``, as an unfinished episode does. The newest
episode of the result stays unfinished.

:func:`export_minari` writes a buffer as a Minari dataset with
``minari.create_dataset_from_buffers`` (h5py only; Minari's ``DataCollector`` needs jax).

Errors in a spec (a missing file, a file that is not HDF5, missing keys, an unknown Minari
name) raise :class:`DatasetError`, a one-line :class:`~tdrl.errors.PresetError` that the
``tdrl`` command reports with exit status 2.

>>> load_dataset("no-such-file.hdf5")
Traceback (most recent call last):
...
tdrl.data.datasets.DatasetError: --dataset: no such file: 'no-such-file.hdf5'
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tdrl.data.buffer import ReplayBuffer
from tdrl.errors import PresetError

__all__ = [
    "MINARI_PREFIX",
    "DatasetError",
    "check_spaces",
    "describe",
    "episode_slices",
    "export_minari",
    "load_dataset",
    "load_hdf5_dataset",
    "load_minari",
]

MINARI_PREFIX = "minari:"
_FLAT = ("obs", "act", "rew", "obs_next")
_D4RL = {
    "observations": "obs",
    "actions": "act",
    "rewards": "rew",
    "terminals": "terminated",
    "timeouts": "truncated",
    "next_observations": "obs_next",
}


class DatasetError(PresetError):
    """A dataset spec that cannot be loaded: one line naming the spec and what is wrong
    (a :class:`~tdrl.errors.PresetError`, so a ``ValueError``)."""


def load_dataset(spec: str | os.PathLike[str]) -> ReplayBuffer:
    """The replay buffer a ``--dataset`` spec names: an HDF5 file or ``minari:NAME``.

    >>> import tempfile, numpy as np
    >>> z = np.zeros(3, dtype=bool)
    >>> buf = ReplayBuffer.from_data(np.zeros((3, 2)), np.arange(3), np.ones(3),
    ...                              z, z, z, np.ones((3, 2)))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     buf.save_hdf5(f"{d}/b.hdf5")
    ...     back = load_dataset(f"{d}/b.hdf5")
    >>> len(back), back.act.tolist()
    (3, [0, 1, 2])
    """
    text = os.fspath(spec)
    if text.startswith(MINARI_PREFIX):
        return load_minari(text[len(MINARI_PREFIX) :])
    return load_hdf5_dataset(text)


# ------------------------------------------------------------------------------- HDF5
def _open(path: str) -> Any:
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - h5py is an optional dependency
        raise DatasetError(
            f"--dataset {path}: reading HDF5 needs h5py: pip install 'tdrl[hdf5]'"
        ) from err
    if not os.path.exists(path):
        raise DatasetError(f"--dataset: no such file: {path!r}")
    if os.path.isdir(path):
        raise DatasetError(f"--dataset {path}: expected an HDF5 file, got a directory")
    if not h5py.is_hdf5(path):
        raise DatasetError(f"--dataset {path}: expected an HDF5 file, got another kind of file")
    try:
        return h5py.File(path, "r")
    except OSError as err:  # e.g. truncated: the signature is there, the rest is not
        raise _damaged(path, err) from err


def _damaged(path: str, err: BaseException) -> DatasetError:
    reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return DatasetError(
        f"--dataset {path}: expected a readable HDF5 file, got a damaged one "
        f"(truncated or corrupt: {reason})"
    )


def load_hdf5_dataset(path: str | os.PathLike[str]) -> ReplayBuffer:
    """A replay buffer from an HDF5 file in any of the layouts the module lists.

    >>> import tempfile, h5py, numpy as np
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with h5py.File(f"{d}/flat.hdf5", "w") as f:
    ...         f["obs"], f["act"], f["rew"] = np.zeros((4, 2)), np.zeros(4), np.ones(4)
    ...         f["done"] = np.array([0, 1, 0, 0], bool)
    ...     load_hdf5_dataset(f"{d}/flat.hdf5")
    Traceback (most recent call last):
    ...
    tdrl.data.datasets.DatasetError: --dataset .../flat.hdf5: missing key(s) obs_next; ...
    """
    path = os.fspath(path)
    with _open(path) as f:
        try:
            if "columns" in f and "class" in f.attrs:
                return _load_tdrl(path, f)
            if "_meta" in f:
                return _load_tianshou(path, f)
            return _load_flat(path, f)
        except OSError as err:  # a read past the end of a truncated file
            raise _damaged(path, err) from err


def _load_tdrl(path: str, f: Any) -> ReplayBuffer:
    """A buffer written by tdrl's ``save_hdf5``, rebuilt by its own class."""
    import tdrl.data.buffer as buffers

    name = str(f.attrs["class"])
    cls = getattr(buffers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, ReplayBuffer)):
        raise DatasetError(
            f"--dataset {path}: expected a file written by a tdrl buffer's save_hdf5, "
            f"got buffer class {name!r}"
        )
    try:
        buf: ReplayBuffer = cls.load_group(f)
    except (KeyError, ValueError, TypeError) as err:
        raise DatasetError(f"--dataset {path}: damaged tdrl buffer file ({err})") from err
    return buf


def _missing(path: str, have: Any, needed: tuple[str, ...], layout: str) -> None:
    lacking = [k for k in needed if k not in have]
    if lacking:
        raise DatasetError(
            f"--dataset {path}: missing key(s) {', '.join(lacking)}; expected {layout}, "
            f"got keys {', '.join(sorted(have)) or 'none'}"
        )


def _flags(group: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(terminated, truncated) of ``n`` rows; a lone ``done`` counts as terminated."""

    def read(key: str) -> np.ndarray:
        flag = np.asarray(group[key][()], bool).reshape(-1) if key in group else None
        if flag is None:
            return np.zeros(n, dtype=bool)
        if len(flag) != n:
            raise ValueError(f"{key}: expected {n} rows (= len(rew)), got {len(flag)}")
        return flag

    trunc = read("truncated")
    term = read("terminated") if "terminated" in group else read("done") & ~trunc
    return term, trunc


def _load_flat(path: str, f: Any) -> ReplayBuffer:
    """Root-level arrays: Tianshou's ``from_data`` names or D4RL's."""
    names = {_D4RL.get(k, k): k for k in f}
    layout = (
        "a tdrl buffer file, a Tianshou buffer file (_meta group) or arrays obs, act, rew, "
        "terminated/truncated/done, obs_next"
    )
    _missing(path, names, _FLAT, layout)
    if not any(k in names for k in ("terminated", "truncated", "done")):
        _missing(path, names, ("terminated",), layout)
    view = {k: f[v] for k, v in names.items()}
    data = {k: np.asarray(view[k][()]) for k in _FLAT}
    n = len(data["rew"])
    try:
        term, trunc = _flags(view, n)
    except ValueError as err:
        raise DatasetError(f"--dataset {path}: {err}") from err
    return _from_arrays(path, data, term, trunc)


def _load_tianshou(path: str, f: Any) -> ReplayBuffer:
    """Tianshou's ``save_hdf5`` layout: ``_meta`` rows, sub-buffers by ``_offset``."""
    meta = f["_meta"]
    layout = "a Tianshou buffer's _meta group with obs, act, rew, done, obs_next"
    _missing(path, meta, ("obs", "act", "rew", "done"), layout)
    size = int(f.attrs.get("_size", len(meta["rew"])))
    maxsize = int(f.attrs.get("maxsize", len(meta["rew"])))
    if "_offset" in f:  # a vector buffer: sub-buffers side by side
        offsets = np.asarray(f["_offset"][()], dtype=np.int64)
        lengths = np.asarray(f["_lengths"][()], dtype=np.int64)
        last = np.asarray(f["last_index"][()], dtype=np.int64)
        sub = maxsize // max(len(offsets), 1)
    else:
        offsets, lengths = np.zeros(1, np.int64), np.array([size])
        last = np.array([int(f.attrs.get("_insertion_idx", size)) - 1])
        sub = maxsize
    order = []
    for off, n, newest in zip(offsets, lengths, last, strict=True):
        if n == 0:
            continue
        local = newest - off
        start = (local + 1) % sub if n == sub else 0
        order.append(off + (start + np.arange(n)) % sub)
    idx = np.concatenate(order) if order else np.zeros(0, np.int64)
    obs = np.asarray(meta["obs"][()])[idx]
    if "obs_next" in meta:
        obs_next = np.asarray(meta["obs_next"][()])[idx]
    else:  # ignore_obs_next buffers: the next row of the same sub-buffer
        raise DatasetError(
            f"--dataset {path}: missing key(s) obs_next; expected {layout} (buffers saved "
            "with ignore_obs_next are not supported)"
        )
    data = {"obs": obs, "act": np.asarray(meta["act"][()])[idx]}
    data["rew"] = np.asarray(meta["rew"][()])[idx]
    data["obs_next"] = obs_next
    n_rows = len(idx)
    term, trunc = _flags(meta, maxsize)
    term, trunc = term[idx], trunc[idx]
    # the open episode of every sub-buffer but the last ends where its rows end
    ends = np.cumsum([len(o) for o in order])[:-1] - 1
    open_end = ends[~(term[ends] | trunc[ends])] if n_rows else ends
    trunc[open_end] = True
    return _from_arrays(path, data, term, trunc)


def _from_arrays(
    path: str, data: dict[str, np.ndarray], term: np.ndarray, trunc: np.ndarray
) -> ReplayBuffer:
    n = len(data["rew"])
    for key, arr in data.items():
        if len(arr) != n:
            raise DatasetError(
                f"--dataset {path}: {key}: expected {n} rows (= len(rew)), got {len(arr)}"
            )
    if n == 0:
        raise DatasetError(f"--dataset {path}: expected transitions, got an empty dataset")
    buf: ReplayBuffer = ReplayBuffer.from_data(
        data["obs"], data["act"], data["rew"], term, trunc, term | trunc, data["obs_next"]
    )
    return buf


# ----------------------------------------------------------------------------- Minari
def _minari() -> Any:
    try:
        import minari
    except ImportError as err:
        raise DatasetError(
            "--dataset minari:...: reading Minari datasets needs the minari package: "
            "pip install 'tdrl[offline]'"
        ) from err
    return minari


def _minari_root() -> str:
    from minari.storage.datasets_root_dir import get_dataset_path

    return str(get_dataset_path())


def _box_scale(space: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``(low, high)`` of a bounded ``Box`` action space, else ``None`` (no mapping)."""
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Box):
        return None
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        return None
    return low, high


def load_minari(name: str, raw_actions: bool = True) -> ReplayBuffer:
    """A Minari dataset from the local Minari data directory as a tdrl replay buffer.

    Episodes are concatenated in Minari's order; each step's ``obs_next`` is the episode's
    next observation (Minari stores ``T + 1`` observations per episode of ``T`` steps).
    An unknown name is a :class:`DatasetError` that lists the local datasets.

    Minari stores the actions the environment took; tdrl's buffers (as Tianshou's) store a
    policy's raw actions, which for a bounded ``Box`` lie in ``[-1, 1]`` and are scaled to
    ``[low, high]`` by ``policy.map_action``. With ``raw_actions`` (default), Box actions are
    mapped back: ``raw = 2 (a - low) / (high - low) - 1``.
    """
    minari = _minari()
    if not name:
        raise DatasetError("--dataset minari:NAME: expected a dataset name, got ''")
    local = sorted(minari.list_local_datasets())
    if name not in local:
        have = ", ".join(local) if local else "none"
        raise DatasetError(
            f"--dataset minari:{name}: no such Minari dataset in {_minari_root()} "
            f"(local datasets: {have})"
        )
    ds = minari.load_dataset(name)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "act", "rew", "obs_next")}
    terms, truncs = [], []
    episodes = list(ds.iterate_episodes())
    for i, ep in enumerate(episodes):
        obs = np.asarray(ep.observations)
        if obs.dtype == object or not isinstance(ep.observations, np.ndarray):
            raise DatasetError(
                f"--dataset minari:{name}: expected array observations, got "
                f"{type(ep.observations).__name__} (dict and tuple spaces are not supported)"
            )
        t = len(ep.rewards)
        if t == 0:
            continue
        term = np.asarray(ep.terminations, bool).copy()
        trunc = np.asarray(ep.truncations, bool).copy()
        if i < len(episodes) - 1 and not (term[-1] or trunc[-1]):
            trunc[-1] = True  # an episode cut by the end of collection: bootstrap, cut chain
        cols["obs"].append(obs[:t])
        cols["obs_next"].append(obs[1 : t + 1])
        cols["act"].append(np.asarray(ep.actions))
        cols["rew"].append(np.asarray(ep.rewards))
        terms.append(term)
        truncs.append(trunc)
    if not terms:
        raise DatasetError(f"--dataset minari:{name}: expected transitions, got none")
    data = {k: np.concatenate(v) for k, v in cols.items()}
    box = _box_scale(ds.action_space) if raw_actions else None
    if box is not None:
        low, high = box
        act = 2.0 * (data["act"] - low) / np.maximum(high - low, 1e-12) - 1.0
        data["act"] = act.astype(data["act"].dtype, copy=False)
    return _from_arrays(f"minari:{name}", data, np.concatenate(terms), np.concatenate(truncs))


def episode_slices(buffer: ReplayBuffer) -> Iterator[np.ndarray]:
    """The buffer's episodes as chronological index arrays, sub-buffer by sub-buffer; an
    episode ends at a done step or at the newest step of an unfinished episode.

    >>> z = np.zeros(5, dtype=bool)
    >>> buf = ReplayBuffer.from_data(np.arange(5), np.arange(5), np.ones(5),
    ...                              np.array([0, 1, 0, 0, 0], bool), z, z, np.arange(1, 6))
    >>> [e.tolist() for e in episode_slices(buf)]
    [[0, 1], [2, 3, 4]]
    """
    idx = np.asarray(buffer.sample_indices(0))
    if len(idx) == 0:
        return
    ends = np.flatnonzero(np.asarray(buffer.next(idx)) == idx)
    start = 0
    for end in ends:
        yield idx[start : end + 1]
        start = end + 1


def _action_scale(env_id: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The Box bounds of ``env_id``'s action space for scaling raw actions (``None``: not
    a bounded Box); an unknown id raises :class:`DatasetError`."""
    import gymnasium as gym

    try:
        probe = gym.make(env_id)
    except Exception as err:
        if type(err).__module__ != "gymnasium.error":
            raise
        raise DatasetError(f"export_minari: env_id {env_id!r}: {err}") from err
    box = _box_scale(probe.action_space)
    probe.close()
    return box


def _episode_buffers(buffer: ReplayBuffer, box: tuple[np.ndarray, np.ndarray] | None) -> list[Any]:
    """Minari ``EpisodeBuffer`` objects, one per episode of ``buffer`` (actions scaled to
    ``box`` when given)."""
    from minari.data_collector import EpisodeBuffer

    episodes = []
    for i, idx in enumerate(episode_slices(buffer)):
        rows = buffer[idx]
        obs = np.asarray(rows.obs)
        last_next = np.asarray(rows.obs_next)[-1:]
        act = np.asarray(rows.act)
        if box is not None:
            low, high = box
            act = (low + (act + 1.0) * (high - low) / 2.0).astype(act.dtype, copy=False)
        episodes.append(
            EpisodeBuffer(
                id=i,
                observations=np.concatenate([obs, last_next]),
                actions=act,
                rewards=np.asarray(rows.rew, dtype=np.float64).tolist(),
                terminations=np.asarray(rows.terminated, bool).tolist(),
                truncations=np.asarray(rows.truncated, bool).tolist(),
                infos={},
            )
        )
    return episodes


def export_minari(
    buffer: ReplayBuffer,
    name: str,
    env_id: str,
    *,
    algorithm_name: str | None = None,
    author: str | None = None,
    description: str | None = None,
    overwrite: bool = False,
    raw_actions: bool = True,
) -> Path:
    """Write ``buffer`` as the Minari dataset ``name`` (e.g. ``"tdrl/pendulum/sac-v0"``)
    in the local Minari data directory; return its directory.

    Each episode becomes a Minari episode of ``T`` steps and ``T + 1`` observations (its
    observations and its last step's ``obs_next``); ``env_id`` is the gymnasium id recorded
    as the dataset's environment (its spaces are the dataset's). Through
    ``minari.create_dataset_from_buffers``: h5py only, no jax.

    With ``raw_actions`` (default) the buffer holds raw policy actions, and bounded ``Box``
    actions are written in the environment's units, ``a = low + (raw + 1) (high - low) / 2``
    (:func:`load_minari` maps them back).
    """
    import warnings

    minari = _minari()
    box = _action_scale(env_id) if raw_actions else None
    if len(buffer) == 0:
        raise DatasetError(f"export_minari: expected a non-empty buffer, got {len(buffer)} rows")
    if name in minari.list_local_datasets():
        if not overwrite:
            raise DatasetError(
                f"export_minari: dataset {name!r} exists in {_minari_root()}; pass "
                "overwrite=True to replace it"
            )
        minari.delete_dataset(name)
    episodes = _episode_buffers(buffer, box)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # author, permalink, ... are optional
        try:
            minari.create_dataset_from_buffers(
                name,
                episodes,
                env=env_id,
                algorithm_name=algorithm_name,
                author=author,
                description=description,
            )
        except ValueError as err:
            raise DatasetError(f"export_minari {name!r}: {err}") from err
    return Path(_minari_root()) / name


def describe(buffer: ReplayBuffer) -> dict[str, Any]:
    """Transitions, finished episodes and their mean return.

    >>> z = np.zeros(4, dtype=bool)
    >>> buf = ReplayBuffer.from_data(np.zeros(4), np.zeros(4), np.arange(4.0),
    ...                              np.array([0, 1, 0, 0], bool), z, z, np.zeros(4))
    >>> import json
    >>> json.dumps(describe(buf))
    '{"transitions": 4, "episodes": 1, "mean_return": 1.0}'
    """
    returns = []
    for idx in episode_slices(buffer):
        rows = buffer[idx]
        if bool(np.asarray(rows.done)[-1]):
            returns.append(float(np.asarray(rows.rew).sum()))
    mean = float(np.mean(returns)) if returns else float("nan")
    return {"transitions": len(buffer), "episodes": len(returns), "mean_return": mean}


def check_spaces(buffer: ReplayBuffer, observation_space: Any, action_space: Any) -> None:
    """Raise a one-line :class:`DatasetError` unless the buffer's observations and actions
    fit the environment's spaces (shape; integer actions for a ``Discrete`` space).

    >>> import gymnasium as gym
    >>> z = np.zeros(2, dtype=bool)
    >>> buf = ReplayBuffer.from_data(np.zeros((2, 4)), np.zeros(2, np.int64), np.ones(2),
    ...                              z, z, z, np.zeros((2, 4)))
    >>> check_spaces(buf, gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2))
    Traceback (most recent call last):
    ...
    tdrl.data.datasets.DatasetError: --dataset: observations of shape (4,) do not fit the ...
    """
    import gymnasium as gym

    idx = np.asarray(buffer.sample_indices(0))[:1]
    if len(idx) == 0:
        raise DatasetError("--dataset: expected transitions, got an empty dataset")
    row = buffer[idx]
    obs_shape = tuple(np.asarray(row.obs).shape[1:])
    act = np.asarray(row.act)
    want_obs = tuple(observation_space.shape or ())
    if obs_shape != want_obs:
        raise DatasetError(
            f"--dataset: observations of shape {obs_shape} do not fit the environment's "
            f"observation space of shape {want_obs}"
        )
    if isinstance(action_space, gym.spaces.Discrete):
        if act.dtype.kind not in "iub" or act.shape[1:] not in ((), (1,)):
            raise DatasetError(
                f"--dataset: expected integer actions for a Discrete action space, got "
                f"{act.dtype} actions of shape {act.shape[1:]}"
            )
    elif isinstance(action_space, gym.spaces.Box) and tuple(act.shape[1:]) != action_space.shape:
        raise DatasetError(
            f"--dataset: actions of shape {tuple(act.shape[1:])} do not fit the environment's "
            f"action space of shape {action_space.shape}"
        )
