"""TD3+BC (Fujimoto & Gu 2021, arXiv:2106.06860): offline TD3 with a behaviour-cloning
term in the actor's loss and normalized observations.

TD3 (:mod:`tdrl.algorithm.modelfree.td3`: twin critics, target policy smoothing, delayed
actor and target updates) trained on a fixed dataset ``D``, with one change to the actor's
objective. Observations are normalized with the dataset's statistics,
``s <- (s - mu_D) / sqrt(var_D + eps)`` (``eps`` = float32's machine epsilon, as
Tianshou's ``RunningMeanStd``), everywhere: critics, actor, targets and the acting policy.
Per gradient step ``i`` on a batch ``{(s, a, r, s')}`` of ``D``::

    a'   = pi'(s') + clip(policy_noise N(0, I), -noise_clip, noise_clip)
    y    = r + gamma (1 - term) min_j Q'_j(s', a')                     (n-step: as TD3)
    L_Q  = mean(sum_j (Q_j(s, a) - y)^2)                               (every step)
    if i % update_actor_freq == 0:
        lambda = alpha / mean(|Q_1(s, pi(s))|)                         (no gradient)
        L_pi   = -lambda mean(Q_1(s, pi(s))) + mean((pi(s) - a)^2)     (actor step)
        Q'_j <- (1 - tau) Q'_j + tau Q_j,  pi' <- (1 - tau) pi' + tau pi

``lambda`` balances RL and imitation: dividing by the mean absolute Q makes the Q term
scale-free, so ``alpha`` (2.5 in the paper) means the same on any reward scale.

The normalizer is a :class:`~tdrl.utils.normalize.RunningNorm` module inside the policy
(:class:`TD3BCPolicy`, ``policy.obs_rms``), filled from the dataset by the preset's builder
(:func:`dataset_obs_rms`) and saved in every ``state_dict``: a trained policy takes raw
observations, so ``tdrl eval``, a TorchRL env and a plain ``policy(obs)`` need no wrapper.
(Tianshou's example normalizes the buffer once and wraps the test envs in
``VectorEnvNormObs`` instead; the arithmetic is the same.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.actor_critic import ContinuousDeterministicPolicy
from tdrl.algorithm.modelfree.td3 import TD3, TD3Params
from tdrl.algorithm.policy import call_model, make_batch
from tdrl.data.batch import Batch
from tdrl.utils.normalize import TIANSHOU_EPS, RunningNorm

__all__ = ["TD3BC", "TD3BCPolicy", "dataset_obs_rms"]


def dataset_obs_rms(buffer: Any, eps: float = TIANSHOU_EPS) -> RunningNorm:
    """The observation normalizer of a dataset: mean and (population) variance of every
    stored observation, ``eps`` added to the variance, no clipping.

    >>> from tdrl.data.buffer import ReplayBuffer
    >>> z = np.zeros(4, dtype=bool)
    >>> buf = ReplayBuffer.from_data(np.array([[0.0], [2.0], [4.0], [6.0]]), np.zeros(4),
    ...                              np.zeros(4), z, z, z, np.zeros((4, 1)))
    >>> rms = dataset_obs_rms(buf)
    >>> rms.mean.tolist(), rms.var.tolist()
    ([3.0], [5.0])
    """
    obs = np.asarray(buffer[buffer.sample_indices(0)].obs, dtype=np.float64)
    rms = RunningNorm(obs.shape[1:], clip=math.inf, eps=eps)
    rms.update(obs)
    return rms


class TD3BCPolicy(ContinuousDeterministicPolicy):
    """A deterministic actor on normalized observations: ``a = actor(obs_rms(obs))``.

    :param actor: ``obs -> action [B, act_dim]`` in ``[-1, 1]``.
    :param action_space: a ``Box`` space.
    :param obs_rms: the observation normalizer (e.g. :func:`dataset_obs_rms`); ``None``:
        raw observations. Its statistics are buffers of the policy (checkpointed).
    :param exploration_noise: as :class:`ContinuousDeterministicPolicy` (``None`` offline).
    :param action_scaling: scale ``[-1, 1]`` to the Box range in :meth:`map_action`.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DeterministicActor
    >>> rms = RunningNorm(3, clip=math.inf); rms.update(np.array([[1.0, 2, 3], [3, 4, 5]]))
    >>> p = TD3BCPolicy(actor=DeterministicActor(3, 1, (8,)), obs_rms=rms,
    ...                 action_space=gym.spaces.Box(-2.0, 2.0, (1,)))
    >>> p.normalize(torch.tensor([[2.0, 3.0, 4.0]])).tolist()
    [[0.0, 0.0, 0.0]]
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: Any,
        obs_rms: RunningNorm | None = None,
        exploration_noise: Any = None,
        observation_space: Any = None,
        action_scaling: bool = True,
        action_bound_method: str | None = "clip",
    ) -> None:
        super().__init__(
            actor=actor,
            action_space=action_space,
            exploration_noise=exploration_noise,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.obs_rms = obs_rms

    def normalize(self, obs: Any) -> Any:
        """``(obs - mean) / sqrt(var + eps)`` in float32 (unchanged without ``obs_rms``)."""
        if self.obs_rms is None:
            return obs
        t = torch.as_tensor(obs, device=self.obs_rms.mean.device)
        return self.obs_rms.normalize(t if t.is_floating_point() else t.float())

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """``act = actor(normalize(obs))``."""
        obs = self.normalize(batch["obs"])
        act, hidden = call_model(self.actor, obs, state, batch.get("info", None))
        return make_batch({"act": act, "state": hidden}, act.shape[0])


class TD3BC(TD3):
    """TD3+BC: TD3 on normalized observations whose actor also clones the dataset's actions.

    :param policy: a :class:`TD3BCPolicy` (its ``obs_rms`` normalizes every network's
        input); a plain :class:`ContinuousDeterministicPolicy` trains on raw observations.
    :param alpha: weight of the Q term relative to the behaviour cloning term, ``> 0``.

    The other parameters are :class:`~tdrl.algorithm.modelfree.td3.TD3`'s. Stages: the
    critics' ``loss_qvalue`` and the (delayed) ``loss_actor``.

    >>> import gymnasium as gym
    >>> from tdrl.utils.net import DeterministicActor, QCritic
    >>> policy = TD3BCPolicy(actor=DeterministicActor(3, 1, (16,)),
    ...                      action_space=gym.spaces.Box(-2.0, 2.0, (1,)))
    >>> alg = TD3BC(policy=policy, critic=QCritic(3, 1, (16,)), alpha=2.5)
    >>> td = make_batch({"obs": torch.randn(4, 3), "act": torch.zeros(4, 1),
    ...                  "returns": torch.zeros(4)}, 4)
    >>> sorted(k for k in alg(td).keys() if k.startswith("loss"))
    ['loss_actor', 'loss_qvalue']
    """

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        alpha: float = 2.5,
        **kwargs: Unpack[TD3Params],
    ) -> None:
        if not alpha > 0.0:
            raise ValueError(f"alpha: expected a value > 0, got {alpha}")
        super().__init__(policy=policy, **kwargs)
        self._bc_alpha = float(alpha)

    @property
    def alpha(self) -> float:  # type: ignore[override]
        """The weight of the Q term against the behaviour cloning term."""
        return self._bc_alpha

    def normalize(self, obs: Any) -> Any:
        """The policy's observation normalization (identity without ``obs_rms``)."""
        norm = getattr(self.policy, "normalize", None)
        return norm(obs) if norm is not None else obs

    def obs_of(self, td: TensorDictBase) -> Any:
        """The batch's observations, normalized."""
        return self.normalize(super().obs_of(td))

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """TD3's smoothed twin-minimum bootstrap at the normalized next observation."""
        return super().next_value(self.normalize(obs_next))

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -lambda mean(Q_1(s, pi(s))) + mean((pi(s) - a)^2)`` with
        ``lambda = alpha / mean|Q_1(s, pi(s))|`` (detached); critic weights held fixed."""
        obs = self.obs_of(td)
        act, _ = call_model(self.policy.actor, obs)
        q = self.q_values(obs, act, detach=True)[0]
        lmbda = self.alpha / q.abs().mean().detach()
        target = self.act_of(td).to(act.dtype).reshape(act.shape)
        bc = F.mse_loss(act, target)
        return {"loss_actor": -lmbda * q.mean() + bc, "bc_mse": bc.detach(), "lmbda": lmbda}
