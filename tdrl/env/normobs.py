"""Vector envs whose observations are normalized by a running mean and std.

Two forms of Tianshou's ``VectorEnvNormObs``: :class:`NormObsVectorEnv` wraps any vector env
(``NormObsVectorEnv(venv)``, Tianshou's spelling), :class:`NormObsDummyVectorEnv` is a
:class:`~tdrl.env.DummyVectorEnv` built from env factories. Both normalize with
:class:`~tdrl.utils.normalize.VectorEnvNormObs` and behave the same.

>>> import gymnasium as gym
>>> envs = NormObsDummyVectorEnv([lambda: gym.make("Pendulum-v1")] * 3)
>>> obs, _ = envs.reset(seed=0)
>>> int(envs.obs_rms.count), bool(abs(obs.mean(0)).max() < 1e-5)
(3, True)
"""

from __future__ import annotations

from tdrl.env.base import BaseVectorEnv
from tdrl.env.dummy import DummyVectorEnv
from tdrl.env.venv_wrapper import VectorEnvWrapper
from tdrl.utils.normalize import RunningNorm, VectorEnvNormObs

__all__ = ["NormObsDummyVectorEnv", "NormObsVectorEnv"]


class NormObsDummyVectorEnv(VectorEnvNormObs, DummyVectorEnv):
    """A :class:`~tdrl.env.DummyVectorEnv` whose observations are normalized by a running
    mean/std (:class:`~tdrl.utils.normalize.VectorEnvNormObs`, Tianshou's
    ``VectorEnvNormObs``): what a run makes for a preset with ``obs_norm`` on. The training
    envs update the statistics while they collect; the test envs share them frozen
    (``obs_rms=train.obs_rms, update_obs_rms=False``).
    """


class NormObsVectorEnv(VectorEnvNormObs, VectorEnvWrapper):
    """Any vector env, its observations normalized by a running mean/std: Tianshou's
    ``VectorEnvNormObs(venv)``.

    ``reset`` and ``step`` return the wrapped env's results with the observations normalized
    as :class:`~tdrl.utils.normalize.VectorEnvNormObs` describes; everything else is the
    wrapped env's (:class:`~tdrl.env.venv_wrapper.VectorEnvWrapper`).

    :param venv: the vector env to wrap (an array observation space).
    :param update_obs_rms: fold every returned observation into the statistics (training
        envs); ``False`` keeps them frozen (test envs).
    :param obs_rms: the statistics to normalize with (default: new ones); test envs take
        the training envs' (``obs_rms=train.get_obs_rms()`` or :meth:`set_obs_rms`).

    >>> import gymnasium as gym
    >>> from tdrl.env import DummyVectorEnv
    >>> train = NormObsVectorEnv(DummyVectorEnv([lambda: gym.make("Pendulum-v1")] * 2))
    >>> test = NormObsVectorEnv(
    ...     DummyVectorEnv([lambda: gym.make("Pendulum-v1")]),
    ...     update_obs_rms=False, obs_rms=train.get_obs_rms())
    >>> obs, _ = train.reset(seed=0)
    >>> obs.shape, int(train.get_obs_rms().count)
    ((2, 3), 2)
    >>> _ = test.reset(seed=1); int(test.get_obs_rms().count)  # shared, frozen
    2
    """

    def __init__(
        self,
        venv: BaseVectorEnv,
        update_obs_rms: bool = True,
        obs_rms: RunningNorm | None = None,
    ) -> None:
        super().__init__(venv, obs_rms=obs_rms, update_obs_rms=update_obs_rms)
