"""A run directory's files: ``config.yaml`` (the resolved run config), ``policy.pt`` (the
final policy weights), and :func:`load_policy`, which rebuilds the trained policy from them.

Layout of ``runs/ALGO-TASK-seedS[-N]/`` (see ``docs/run-directory.md``)::

    config.yaml      algo, task, seed and run options, then every preset field (resolved),
                     all at the top level
    policy.pt        {"format": "tdrl-policy", "version": 1, "algo", "task",
                      "policy": policy.state_dict(), "obs_rms": RunningNorm state or None}
    checkpoint.pt    the whole run, for --resume (tdrl.trainer.checkpoint)
    train.csv, test.csv, update.csv, save.csv, curve.png

``tdrl train --config RUN_DIR/config.yaml`` reproduces a run (in a new directory).
Importing this module loads no torch (only :func:`save_policy` and :func:`load_policy` do).

>>> import tempfile
>>> from tdrl import registry
>>> d = Path(tempfile.mkdtemp())
>>> p = registry.preset("dqn", "CartPole-v1")
>>> write_run_config(d, {"algo": "dqn", "task": "CartPole-v1", "seed": 3}, p).name
'config.yaml'
>>> cfg = read_run_config(d)
>>> cfg["algo"], cfg["seed"], cfg["lr"], cfg["hidden_sizes"]
('dqn', 3, 0.001, [128, 128, 128])
>>> registry.preset(cfg["algo"], cfg["task"], **config_preset_fields(cfg)) == p
True
"""

from __future__ import annotations

import dataclasses
import pickle
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tdrl import registry
from tdrl.cli import RUN_OPTIONS
from tdrl.errors import CheckpointError, RunDirError

if TYPE_CHECKING:
    import torch

    from tdrl.algorithm.base import Policy

__all__ = [
    "CONFIG_FILE",
    "POLICY_FILE",
    "POLICY_FORMAT",
    "RUN_KEYS",
    "CheckpointError",
    "config_preset_fields",
    "load_policy",
    "read_policy_file",
    "read_run_config",
    "rebuild",
    "save_policy",
    "write_run_config",
]

CONFIG_FILE = "config.yaml"
POLICY_FILE = "policy.pt"
POLICY_FORMAT = "tdrl-policy"
_HEADER = (
    "# tdrl run config: the resolved settings of this run.\n"
    "# `tdrl train --config THIS_FILE` trains it again (in a new run directory);\n"
    "# flags given beside --config win over the values here.\n"
)


def _plain(value: Any) -> Any:
    """Tuples as lists (YAML's safe dumper knows no tuples)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def preset_fields(preset: registry.Preset) -> dict[str, Any]:
    """Every field of ``preset`` but ``task``, YAML-ready (tuples as lists)."""
    return {
        f.name: _plain(getattr(preset, f.name))
        for f in dataclasses.fields(preset)
        if f.name != "task"
    }


def write_run_config(run_dir: str | Path, options: dict[str, Any], preset: Any) -> Path:
    """Write ``RUN_DIR/config.yaml``: ``options`` (``algo``, ``task``, ``seed``, ...), then
    every field of ``preset``, one flat mapping. Returns the path (written atomically)."""
    import yaml

    path = Path(run_dir) / CONFIG_FILE
    fields = preset_fields(preset)
    clash = sorted(set(fields) & set(options))
    if clash:
        raise ValueError(f"preset fields {clash} clash with run options of the same name")
    data = {**{k: _plain(v) for k, v in options.items()}, **fields}
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(_HEADER + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_run_config(path: str | Path) -> dict[str, Any]:
    """Read a run's ``config.yaml`` (``path``: the file or its run directory).

    Returns the mapping with ``algo`` and ``task`` checked; a missing or malformed file is a
    :class:`~tdrl.errors.CheckpointError` naming it.
    """
    import yaml

    path = Path(path)
    if path.is_dir():
        path = path / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"config {path}: expected a tdrl run config file, found none")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(f"config {path}: expected YAML, could not parse it: {first}") from exc
    if not isinstance(data, dict):
        raise CheckpointError(f"config {path}: expected a mapping of settings, got {data!r}")
    for key in ("algo", "task"):
        if not isinstance(data.get(key), str):
            raise CheckpointError(
                f"config {path}: expected a string {key!r} entry, got {data.get(key)!r}"
            )
    if not isinstance(data.get("preset", {}), dict):
        raise CheckpointError(f"config {path}: expected 'preset' to be a mapping of fields")
    return data


RUN_KEYS = ("algo", "task", *RUN_OPTIONS)
"""The keys of ``config.yaml`` that are not preset fields."""


def config_preset_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """The preset fields of a config mapping: every key but :data:`RUN_KEYS` (fields nested
    under ``preset:`` too)."""
    nested = cfg.get("preset") or {}
    out = {k: v for k, v in cfg.items() if k not in RUN_KEYS and k != "preset"}
    out.update(nested)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in out.items()}


def save_policy(
    policy: Policy, path: str | Path, algo: str, task: str, obs_rms: Any = None
) -> Path:
    """Write the policy's weights (and the observation normalizer's statistics, if the run
    normalizes observations) to ``path``, atomically. See the module docstring's layout."""
    from tdrl.trainer.checkpoint import atomic_save

    state = {
        "format": POLICY_FORMAT,
        "version": 1,
        "algo": algo,
        "task": task,
        "policy": policy.state_dict(),
        "obs_rms": obs_rms.state_dict() if obs_rms is not None else None,
    }
    return atomic_save(state, path)


def read_policy_file(path: str | Path) -> dict[str, Any]:
    """Load a ``policy.pt``; a missing, corrupt or foreign file is a
    :class:`~tdrl.errors.CheckpointError` naming it."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"policy {path}: expected a file of trained weights, found none")
    try:
        state = torch.load(path, weights_only=False, map_location="cpu")
    except (
        RuntimeError,
        EOFError,
        pickle.UnpicklingError,
        zipfile.BadZipFile,
        ValueError,
        AttributeError,
        ImportError,
        IndexError,
        KeyError,
        TypeError,
    ) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(
            f"policy {path}: expected a tdrl policy file (torch.save), could not read it: {first}"
        ) from exc
    if not isinstance(state, dict) or state.get("format") != POLICY_FORMAT:
        kind = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(
            f"policy {path}: expected a {POLICY_FORMAT!r} file (tdrl train's policy.pt), "
            f"got {kind!r}"
        )
    return state  # type: ignore[no-any-return]


class _ObsNormPolicyMixin:
    """Normalizes ``batch["obs"]`` with ``self.obs_rms`` before the policy's own forward
    (what the run's normalized vector envs did; mixed into a loaded policy's class)."""

    obs_rms: Any

    def forward(self, batch: Any, state: Any = None, **kwargs: Any) -> Any:
        obs = batch["obs"]
        normed = self.obs_rms.normalize(obs.double()).to(obs.dtype)
        batch = batch.copy()
        batch["obs"] = normed
        return super().forward(batch, state, **kwargs)  # type: ignore[misc]


def _with_obs_norm(policy: Policy, obs_rms_state: dict[str, Any]) -> Policy:
    """``policy``, changed in place to normalize observations with the saved statistics."""
    from tdrl.utils.normalize import TIANSHOU_EPS, RunningNorm

    mean = obs_rms_state["mean"]
    norm = RunningNorm(tuple(mean.shape), clip=10.0, eps=TIANSHOU_EPS)
    norm.load_state_dict(obs_rms_state)
    cls = type(policy)
    policy.__class__ = type(f"ObsNorm{cls.__name__}", (_ObsNormPolicyMixin, cls), {})
    policy.add_module("obs_rms", norm)
    return policy


def _dataset(cfg: dict[str, Any], entry: registry.Entry, where: Path) -> Any:
    if not entry.needs_dataset:
        return None
    if not cfg.get("dataset"):
        raise CheckpointError(
            f"config {where}: {cfg['algo']} is built from a dataset, but the config names none"
        )
    from tdrl.data.datasets import load_dataset

    return load_dataset(cfg["dataset"])


def rebuild(
    run_dir: str | Path, device: str | torch.device = "cpu"
) -> tuple[Policy, dict[str, Any], registry.Preset, registry.Entry]:
    """``(policy, config, preset, entry)`` of a trained run: the algorithm rebuilt from
    ``config.yaml`` (``tdrl.make_algorithm``), the weights of ``policy.pt`` loaded, in eval
    mode. What :func:`load_policy` and ``tdrl eval`` use."""
    from tdrl.algorithm.presets import make_algorithm

    run = Path(run_dir)
    if not run.is_dir():
        raise RunDirError(f"run directory {run}: expected a directory, found none")
    cfg = read_run_config(run)
    where = run / CONFIG_FILE
    try:
        preset = registry.preset(cfg["algo"], cfg["task"], **config_preset_fields(cfg))
    except registry.PresetError as exc:
        raise CheckpointError(f"config {where}: {exc}") from exc
    entry = registry.entry(cfg["algo"], cfg["task"])
    weights = read_policy_file(run / POLICY_FILE)
    env = entry.make_env(cfg["task"], preset, training=False)
    try:
        obs_space, act_space = env.observation_space, env.action_space
    finally:
        env.close()
    algorithm = make_algorithm(
        cfg["algo"],
        cfg["task"],
        preset,
        observation_space=obs_space,
        action_space=act_space,
        device=device,
        dataset=_dataset(cfg, entry, where),
    )
    if cfg.get("icm"):
        apply_icm = registry._import("tdrl.presets.icm:apply_icm")
        algorithm = apply_icm(algorithm, cfg["algo"], cfg["task"], obs_space, act_space)
    policy: Policy = algorithm.policy
    try:
        policy.load_state_dict(weights["policy"])
    except (RuntimeError, KeyError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(
            f"policy {run / POLICY_FILE}: expected weights of the {cfg['algo']} policy "
            f"{where} describes, got mismatched ones ({first})"
        ) from exc
    if weights.get("obs_rms") is not None:
        policy = _with_obs_norm(policy, weights["obs_rms"])
    policy.to(device)
    policy.eval()
    policy.is_within_training_step = False
    return policy, cfg, preset, entry


def load_policy(run_dir: str | Path, device: str | torch.device = "cpu") -> Policy:
    """The trained policy of a ``tdrl train`` run directory, ready to act.

    The algorithm is rebuilt from ``RUN_DIR/config.yaml`` (its preset, resolved) with
    ``tdrl.make_algorithm``, and ``RUN_DIR/policy.pt``'s weights are loaded into its
    policy; a run that normalized observations gets a policy that normalizes raw
    observations with the run's final statistics. The policy is in eval mode (outside a
    training step: deterministic where the preset says ``deterministic_eval``, no
    exploration noise unless a collector adds it).

    A missing or corrupt ``config.yaml`` or ``policy.pt`` is a
    :class:`~tdrl.errors.CheckpointError` naming the file.

    >>> import gymnasium as gym  # doctest: +SKIP
    >>> policy = tdrl.load_policy("runs/ppo-CartPole-v1-seed0")  # doctest: +SKIP
    >>> env = gym.make("CartPole-v1"); obs, _ = env.reset(seed=0)  # doctest: +SKIP
    >>> env.step(policy.compute_action(obs))  # doctest: +SKIP
    """
    return rebuild(run_dir, device)[0]
