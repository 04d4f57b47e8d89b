"""Generative Adversarial Imitation Learning (Ho & Ermon, arXiv:1606.03476) on PPO.

A discriminator ``D(s, a)`` (a logit) learns to tell expert transitions from the policy's;
the policy is trained by PPO on the reward ``-log(1 - sigmoid(D(s, a)))``, which replaces
the environment's reward. Per update, on the rollout::

    r(s, a) = -log sigmoid(-D(s, a))                    (no gradient; the env reward is
                                                          not used)
    GAE, returns, log pi_old                             (PPO's preprocessing, on r)
    for each of disc_update_num shuffled chunks B of the rollout (the last, short one
    merged into the one before), with an expert sample E of len(rollout) // disc_update_num:
        L_D = -mean_B log sigmoid(-D(s, a)) - mean_E log sigmoid(D(s, a))
        one step of the discriminator's optimizer
    PPO's epochs of minibatches                          (tdrl.algorithm.modelfree.ppo)

``D`` reads ``[obs, act]`` concatenated, with the action as stored (the raw policy output;
an expert buffer written by ``tdrl gather`` stores its policy's raw actions too). This is
Tianshou's ``GAIL``; the discriminator is updated before the policy, on the rollout's
rewards computed before that update.

TorchRL: ``loss(td)`` replaces the batch's reward by the discriminator's (on a shallow
copy), returns PPO's terms on it and ``loss_disc`` on the batch against an expert sample
of the same size; ``loss_disc`` reaches only the discriminator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from torch import nn
from typing_extensions import Unpack

from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy, PPOParams
from tdrl.algorithm.optim import OptimizerFactory, Stage
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data.batch import Batch

__all__ = ["GAIL"]


class GAIL(PPO):
    """GAIL: PPO on a learned discriminator's reward; see the module docstring.

    :param policy: an :class:`~tdrl.algorithm.policy_gradient.ActorPolicy`.
    :param critic: ``obs -> V(s)``.
    :param expert_buffer: a replay buffer of expert transitions (``obs``, ``act``), e.g.
        one loaded by :func:`tdrl.data.datasets.load_dataset`.
    :param disc_net: ``[obs, act] -> logit [B, 1]`` (no final activation).
    ``optim`` (a keyword passed on): optimizer factory (or Adam learning rate) for actor + critic.
    :param disc_optim: optimizer factory (or Adam learning rate) for the discriminator.
    :param disc_update_num: discriminator steps per update (chunks of the rollout).

    The other parameters are :class:`~tdrl.algorithm.modelfree.ppo.PPO`'s (Tianshou's
    GAIL defaults: ``max_batchsize`` 256).

    >>> import gymnasium as gym
    >>> from tdrl.data import Batch, ReplayBuffer
    >>> expert = ReplayBuffer(10)
    >>> for _ in range(4):
    ...     _ = expert.add(Batch(obs=np.zeros(3, np.float32), act=np.zeros(1, np.float32),
    ...         rew=0.0, terminated=False, truncated=False, obs_next=np.zeros(3, np.float32)))
    >>> from tdrl.utils.net import GaussianActor, VCritic, MLP
    >>> alg = GAIL(policy=ActorPolicy(actor=GaussianActor(3, 1, (8,), state_dependent_std=False),
    ...            action_space=gym.spaces.Box(-1.0, 1.0, (1,))), critic=VCritic(3, (8,)),
    ...            expert_buffer=expert, disc_net=MLP(4, 1, (8,)))
    >>> alg.disc_reward(Batch(obs=torch.zeros(2, 3), act=torch.zeros(2, 1))).shape
    torch.Size([2])
    >>> GAIL(policy=alg.policy, critic=alg.critic, expert_buffer=expert, disc_net=alg.disc_net,
    ...      disc_update_num=0)
    Traceback (most recent call last):
    ...
    ValueError: disc_update_num: expected an int >= 1, got 0
    """

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        critic: nn.Module,
        expert_buffer: Any,
        disc_net: nn.Module,
        disc_optim: OptimizerFactory | float = 5e-4,
        disc_update_num: int = 4,
        max_batchsize: int = 256,
        **kwargs: Unpack[PPOParams],
    ) -> None:
        require_at_least(1, disc_update_num=disc_update_num)
        if expert_buffer is None or len(expert_buffer) == 0:
            n = None if expert_buffer is None else 0
            raise ValueError(f"expert_buffer: expected a non-empty replay buffer, got {n}")
        super().__init__(policy=policy, critic=critic, max_batchsize=max_batchsize, **kwargs)
        self.disc_net = disc_net
        self.expert_buffer = expert_buffer
        self.disc_update_num = disc_update_num
        self.disc_optim = self._create_optimizer(disc_net, disc_optim)
        # run on chunks of the rollout before PPO's epochs, not on PPO's minibatches
        self.disc_stage = Stage(self.disc_losses, [(("loss_disc",), self.disc_optim)])

    # -- the discriminator --------------------------------------------------------------
    def disc(self, obs: Any, act: Any) -> torch.Tensor:
        """``D(s, a)``: the discriminator's logits ``[B, 1]`` for ``[obs, act]``."""
        param = next(self.disc_net.parameters())
        o = torch.as_tensor(obs, device=param.device).to(param.dtype)
        a = torch.as_tensor(act, device=param.device).to(param.dtype)
        return self.disc_net(torch.cat([o.reshape(o.shape[0], -1), a.reshape(a.shape[0], -1)], 1))

    def disc_reward(self, td: TensorDictBase) -> torch.Tensor:
        """``-log(1 - sigmoid(D(s, a)))`` ``[B]`` (no gradient)."""
        with torch.no_grad():
            return -F.logsigmoid(-self.disc(self.obs_of(td), self.act_of(td))).reshape(-1)

    def expert_sample(self, n: int) -> Batch:
        """``n`` expert transitions, sampled uniformly from :attr:`expert_buffer`."""
        batch, _ = self.expert_buffer.sample(n)
        return batch  # type: ignore[no-any-return]

    def disc_losses(
        self, td: TensorDictBase, expert: TensorDictBase | None = None
    ) -> dict[str, torch.Tensor]:
        """``loss_disc`` of the policy's transitions ``td`` against ``expert`` (default: an
        expert sample of ``len(td)``); the accuracies ``acc_pi`` and ``acc_exp`` logged."""
        if expert is None:
            expert = self.expert_sample(td.shape[0])
        logits_pi = self.disc(self.obs_of(td), self.act_of(td))
        logits_exp = self.disc(expert["obs"], expert["act"])
        loss = -F.logsigmoid(-logits_pi).mean() - F.logsigmoid(logits_exp).mean()
        return {
            "loss_disc": loss,
            "acc_pi": (logits_pi < 0).float().mean().detach(),
            "acc_exp": (logits_exp > 0).float().mean().detach(),
        }

    # -- tdrl's path --------------------------------------------------------------------
    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Replace ``rew`` by the discriminator's reward, then PPO's preprocessing."""
        rew = batch["rew"]
        batch["rew"] = self.disc_reward(batch).to(device=rew.device, dtype=torch.float32)
        return super().preprocess(batch, buffer, indices)

    def update_discriminator(self, batch: TensorDictBase) -> UpdateStats:
        """``disc_update_num`` discriminator steps on shuffled chunks of ``batch``; the means
        of ``loss_disc``, ``acc_pi`` and ``acc_exp``."""
        n = batch.shape[0]
        size = n // self.disc_update_num
        logged: dict[str, list[torch.Tensor]] = {}
        (keys, gs) = self.disc_stage.steps[0]
        for idx in self._minibatches(n, size):
            chunk = batch[idx]
            terms = self.disc_losses(chunk, self.expert_sample(max(size, 1)))
            gs.step(terms[keys[0]])
            for k, v in terms.items():
                logged.setdefault(k, []).append(v.detach())
        return UpdateStats(
            ((k, torch.stack(v).float().mean()) for k, v in logged.items()), derive_loss=False
        )

    def _update_with_batch(self, batch: Batch, batch_size: int | None, repeat: int) -> UpdateStats:
        """The discriminator's steps, then PPO's epochs (``loss`` sums both's terms)."""
        disc = self.update_discriminator(batch)
        return super()._update_with_batch(batch, batch_size, repeat).merge(disc)

    # -- TorchRL's path -----------------------------------------------------------------
    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """For a TorchRL batch: the discriminator's reward in place of the env's (on a
        shallow copy), then PPO's one-step advantages."""
        if td.batch_dims > 1:
            td = td.reshape(-1)
        if "adv" in td:
            return td
        td = td.copy()
        key = self.reward_key
        rew = self._get(td, key, "reward")
        td.set(key, self.disc_reward(td).to(device=rew.device, dtype=rew.dtype).reshape(rew.shape))
        return super().prepare(td)

    def forward(self, td: TensorDictBase) -> TensorDict:
        """PPO's terms on the discriminator's reward, plus ``loss_disc``."""
        td = self.prepare(td)
        out = super().forward(td)
        out.update(self.disc_losses(td))
        return out
