"""A run's ``policy.pt`` (the final policy weights) and :func:`load_policy`, which rebuilds
the trained policy from a run directory.

``policy.pt`` holds ``{"format": "tdrl-policy", "version": 1, "algo", "task", "policy":
policy.state_dict(), "obs_rms": RunningNorm state or None}``; the algorithm is rebuilt from
the run's ``config.yaml`` (:mod:`tdrl.experiment.rundir`). Importing this module loads no
torch (only :func:`save_policy` and :func:`load_policy` do).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tdrl.errors import CheckpointError, PresetError, RunDirError
from tdrl.experiment.rundir import CONFIG_FILE, config_preset_fields, read_run_config
from tdrl.presets import registry

if TYPE_CHECKING:
    import torch

    from tdrl.algorithm import Policy

__all__ = [
    "POLICY_FILE",
    "POLICY_FORMAT",
    "load_policy",
    "read_policy_file",
    "rebuild",
    "save_policy",
]

POLICY_FILE = "policy.pt"
POLICY_FORMAT = "tdrl-policy"


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
    from tdrl.trainer.checkpoint import load_file

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"policy {path}: expected a file of trained weights, found none")
    state = load_file(path, "policy", "a tdrl policy file (torch.save)")
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
    from tdrl.presets import make_algorithm

    run = Path(run_dir)
    if not run.is_dir():
        raise RunDirError(f"run directory {run}: expected a directory, found none")
    cfg = read_run_config(run)
    where = run / CONFIG_FILE
    try:
        preset = registry.preset(cfg["algo"], cfg["task"], **config_preset_fields(cfg))
    except PresetError as exc:
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
        from tdrl.presets.icm import apply_icm

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
