"""A vector env whose observations are normalized by a running mean and std.

>>> import gymnasium as gym
>>> envs = NormObsDummyVectorEnv([lambda: gym.make("Pendulum-v1")] * 3)
>>> obs, _ = envs.reset(seed=0)
>>> int(envs.obs_rms.count), bool(abs(obs.mean(0)).max() < 1e-5)
(3, True)
"""

from __future__ import annotations

from tdrl.env.dummy import DummyVectorEnv
from tdrl.utils.normalize import VectorEnvNormObs

__all__ = ["NormObsDummyVectorEnv"]


class NormObsDummyVectorEnv(VectorEnvNormObs, DummyVectorEnv):
    """A :class:`~tdrl.env.DummyVectorEnv` whose observations are normalized by a running
    mean/std (:class:`~tdrl.utils.normalize.VectorEnvNormObs`, Tianshou's
    ``VectorEnvNormObs``): what a run makes for a preset with ``obs_norm`` on. The training
    envs update the statistics while they collect; the test envs share them frozen
    (``obs_rms=train.obs_rms, update_obs_rms=False``).
    """
