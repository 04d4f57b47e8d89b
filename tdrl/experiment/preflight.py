"""Checks of a run that need no torch, made before torch loads (about 5 s on a slow
machine): a typo in the task id, an algorithm that cannot act in the task's action space,
and a missing ``--dataset`` are reported in well under 2 seconds.

Only gymnasium is imported (and only for tasks made without a wrapper: a wrapper's module,
e.g. Atari's, may load more); the same checks run again, with the real envs, when the run
is built.

>>> from tdrl.experiment.config import ExperimentConfig
>>> preflight(ExperimentConfig("sac", "CartPole-v1"))
Traceback (most recent call last):
...
tdrl.errors.PresetError: sac needs a Box action space; CartPole-v1 has Discrete(2)
"""

from __future__ import annotations

from tdrl.experiment.config import ExperimentConfig
from tdrl.presets import registry

__all__ = ["preflight"]


def preflight(cfg: ExperimentConfig) -> None:
    """Raise the one-line user error a run of ``cfg`` would hit, without loading torch:
    an unknown task id (gymnasium's own error), a dataset missing or given when it should
    not be, or an action space of the wrong kind (:class:`~tdrl.errors.PresetError`)."""
    if cfg.resume:  # the run directory's config decides; checked when the run is built
        return
    preset = cfg.preset()
    spec = registry.entry(cfg.algo, preset.task)
    registry.check_dataset(cfg.algo, spec, cfg.dataset is not None)
    if spec.env_wrapper is not None:
        return
    import gymnasium

    gymnasium.spec(preset.task)  # gymnasium.error.NameNotFound & co. name a typo
    env = gymnasium.make(preset.task)
    try:
        registry.check_action_space(cfg.algo, preset.task, env.action_space)
    finally:
        env.close()
