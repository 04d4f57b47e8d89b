"""Batch-Constrained deep Q-learning (BCQ, Fujimoto et al. 2019, arXiv:1812.02900).

Offline RL for continuous actions: the policy only picks actions that a generative model
``G`` (a conditional VAE, :class:`~tdrl.utils.net_vae.VAE`) of the dataset's behaviour
proposes, nudged by a small perturbation actor ``xi`` (at most ``phi * max_action``,
:class:`~tdrl.utils.net_vae.Perturbation`), and twin critics with soft targets score them.
Per gradient step on a batch ``(s, a, r, s', term)`` of the dataset::

    (a_rec, mu, sigma) = G(s, a)
    L_G  = mean((a_rec - a)^2) + 1/2 mean(KL(N(mu, sigma) || N(0, I)))          (VAE step)
    a'_i = xi'(s', G(s')),  i = 1..n                          (n = num_sampled_action)
    q'_i = lmbda min_j Q'_j(s', a'_i) + (1 - lmbda) max_j Q'_j(s', a'_i)
    y    = r + gamma (1 - term) max_i q'_i
    L_Q  = mean(sum_j (Q_j(s, a) - y)^2)                                      (critic step)
    L_xi = -mean(Q_1(s, xi(s, G(s))))                                         (actor step)
    Q'_j <- (1 - tau) Q'_j + tau Q_j,   xi' <- (1 - tau) xi' + tau xi

The steps run in that order, each on the networks the previous one just moved (as in
Tianshou): the target uses the VAE after its step. Acting samples
``forward_sampled_times`` actions ``xi(s, G(s))`` per state and takes the one with the
largest ``Q_1``.

Unlike Tianshou 2.0.1 (see ``docs/differences.md``), the target actions are perturbed by
the target actor ``xi'`` as in the paper (Tianshou creates ``xi'`` but bootstraps from the
unperturbed ``G(s')``), the perturbation is computed per sample (Tianshou's
``Perturbation`` takes row 0 of a plain network's output for the whole batch), the target
is cut only where an episode terminated (Tianshou: at every ``done``) and the second
critic is freshly initialised by default.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.actor_critic import OffPolicyActorCritic
from tdrl.algorithm.checks import require_at_least, require_instance, require_unit
from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy import ActBoundMethod, Policy, make_batch
from tdrl.data.batch import Batch
from tdrl.utils.net_vae import VAE, Perturbation

__all__ = ["BCQ", "VAE", "BCQPolicy", "Perturbation"]


class BCQPolicy(Policy):
    """Act with the best of ``forward_sampled_times`` perturbed VAE actions under ``Q_1``.

    :param actor_perturbation: ``(obs, act) -> perturbed act`` (e.g.
        :class:`~tdrl.utils.net_vae.Perturbation`).
    :param critic: the first critic ``(obs, act) -> Q [B, 1]``; the algorithm trains it.
    :param vae: the generative model of the dataset's actions (its ``decode(obs)`` samples).
    :param action_space: a ``Box`` space.
    :param forward_sampled_times: candidate actions per state, ``>= 1``.
    :param action_scaling: scale ``[-1, 1]`` to the Box range in :meth:`map_action`
        (Tianshou's default is ``False``; tdrl's datasets store raw ``[-1, 1]`` actions).
    :param action_bound_method: ``"clip"`` (default), ``"tanh"`` or ``None``.

    >>> from tdrl.utils.net import QCritic
    >>> box = gym.spaces.Box(-2.0, 2.0, (1,))
    >>> p = BCQPolicy(actor_perturbation=Perturbation(3, 1, (8,)), critic=QCritic(3, 1, (8,)),
    ...               vae=VAE(3, 1, (8,)), action_space=box, forward_sampled_times=5)
    >>> out = p(make_batch({"obs": torch.zeros(4, 3)}, 4))
    >>> out["act"].shape, bool((out["act"].abs() <= 1.0).all())
    (torch.Size([4, 1]), True)
    """

    def __init__(
        self,
        *,
        actor_perturbation: nn.Module,
        critic: nn.Module,
        vae: VAE,
        action_space: gym.Space,
        forward_sampled_times: int = 100,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: ActBoundMethod = "clip",
    ) -> None:
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"action_space: expected Box, got {type(action_space).__name__}")
        require_at_least(1, forward_sampled_times=forward_sampled_times)
        super().__init__(
            action_space,
            observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor_perturbation = actor_perturbation
        self.critic = critic
        self.vae = vae
        self.forward_sampled_times = forward_sampled_times

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """For each state: ``n`` candidates ``xi(s, G(s))``, keep the ``argmax Q_1``."""
        obs = batch["obs"]
        b, n = obs.shape[0], self.forward_sampled_times
        s = obs.repeat_interleave(n, 0)  # each state's n copies side by side
        cand = self.actor_perturbation(s, self.vae.decode(s))
        best = self.critic(s, cand).reshape(b, n).argmax(1)
        act = cand.reshape(b, n, -1)[torch.arange(b, device=cand.device), best]
        return make_batch({"act": act, "state": state}, b)


class BCQ(OffPolicyActorCritic):
    """BCQ: VAE, perturbation actor and twin critics with a soft clipped double-Q target.

    :param policy: a :class:`BCQPolicy` (its critic is the first critic).
    :param actor_perturbation_optim: optimizer factory (or Adam lr) for the perturbation.
    :param critic_optim: optimizer factory (or Adam lr) for both critics.
    :param vae_optim: optimizer factory (or Adam lr) for the VAE.
    :param critic2: the second critic (default: a re-initialized copy of the first).
    :param gamma: discount factor.
    :param tau: soft target update rate.
    :param lmbda: weight of the min in the target's ``lmbda min + (1 - lmbda) max``, in
        ``[0, 1]``.
    :param num_sampled_action: actions sampled per next state for the target, ``>= 1``.

    >>> from tdrl.utils.net import QCritic
    >>> box = gym.spaces.Box(-1.0, 1.0, (1,))
    >>> p = BCQPolicy(actor_perturbation=Perturbation(3, 1, (8,)), critic=QCritic(3, 1, (8,)),
    ...               vae=VAE(3, 1, (8,)), action_space=box)
    >>> alg = BCQ(policy=p)
    >>> sorted(alg._targets), alg.next_value(torch.zeros(4, 3)).shape
    (['actor', 'critic1', 'critic2'], torch.Size([4]))
    """

    def __init__(
        self,
        *,
        policy: BCQPolicy,
        actor_perturbation_optim: OptimizerFactory | float = 1e-3,
        critic_optim: OptimizerFactory | float = 1e-3,
        vae_optim: OptimizerFactory | float = 1e-3,
        critic2: nn.Module | None = None,
        gamma: float = 0.99,
        tau: float = 0.005,
        lmbda: float = 0.75,
        num_sampled_action: int = 10,
    ) -> None:
        require_instance("policy", policy, BCQPolicy, ValueError)
        require_unit(lmbda=lmbda)
        require_at_least(1, num_sampled_action=num_sampled_action)
        super().__init__(
            policy=policy,
            policy_optim=actor_perturbation_optim,
            critics=self.twin_critics(policy.critic, critic2),
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            actor=policy.actor_perturbation,
            actor_target=True,
        )
        self.policy: BCQPolicy = policy
        self.lmbda = lmbda
        self.num_sampled_action = num_sampled_action
        self.vae_optim = self._create_optimizer(policy.vae, vae_optim)
        self._add_stage(self.vae_losses, ("loss_vae", self.vae_optim))
        self._add_stage(self.critic_losses, ("loss_qvalue", self.critic_optim))
        self._add_stage(self.actor_losses, ("loss_actor", self.policy_optim))

    @property
    def actor_perturbation_old(self) -> nn.Module:
        """The target perturbation actor ``xi'``."""
        return self.actor_old  # type: ignore[no-any-return]

    # -- targets: computed in the critic stage, after the VAE step ----------------------
    def preprocess(self, batch: Batch, buffer: Any, indices: Any) -> Batch:
        """Nothing: the one-step target is computed in :meth:`critic_losses`."""
        return batch

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """Nothing: the one-step target is computed in :meth:`critic_losses`."""
        return td

    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``max_i [lmbda min_j Q'_j(s', a'_i) + (1 - lmbda) max_j Q'_j(s', a'_i)]`` over
        ``n`` actions ``a'_i = xi'(s', G(s'))``."""
        n = self.num_sampled_action
        s = obs_next.repeat_interleave(n, 0)
        act = self.actor_old(s, self.policy.vae.decode(s))
        qs = torch.stack(self.q_values(s, act, target=True))  # [critics, B * n]
        q = self.lmbda * qs.min(0).values + (1.0 - self.lmbda) * qs.max(0).values
        return q.reshape(-1, n).max(1).values

    # -- stages -------------------------------------------------------------------------
    def vae_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_vae = mse(G(s, a), a) + KL(N(mu, sigma) || N(0, I)) / 2`` (KL averaged
        over the latent dimensions and the batch)."""
        obs, act = self.obs_of(td), self.act_of(td)
        recon, mean, std = self.policy.vae(obs, act)
        recon_loss = F.mse_loss(recon, act)
        kl = (-torch.log(std) + (std.pow(2) + mean.pow(2) - 1.0) / 2.0).mean()
        return {
            "loss_vae": recon_loss + kl / 2.0,
            "vae_recon": recon_loss.detach(),
            "vae_kl": kl.detach(),
        }

    def critic_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """The one-step target (unless the batch has ``returns``), then the base's
        ``loss_qvalue = mean(sum_j (Q_j(s, a) - y)^2)``."""
        return super().critic_losses(self.one_step_returns(td))

    def actor_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(Q_1(s, xi(s, G(s))))``; only ``xi`` is trained by it."""
        obs = self.obs_of(td)
        with torch.no_grad():
            sampled = self.policy.vae.decode(obs)
        act = self.policy.actor_perturbation(obs, sampled)
        q = self.q_values(obs, act, detach=True)[0]
        return {"loss_actor": -q.mean()}
