"""Trust Region Policy Optimization (arXiv:1502.05477), as in Tianshou's TRPO.

:class:`~tdrl.algorithm.modelfree.npg.NPG` with the importance-sampled surrogate and, in
place of NPG's fixed step, the largest step the quadratic KL model allows followed by a
backtracking line search on the true KL and surrogate::

    L(theta)  = -mean(pi_theta(a | s) / pi_old(a | s) A)        (loss_objective)
    d         = -(F + damping I)^-1 grad L                     (conjugate gradients, as NPG)
    beta      = sqrt(2 max_kl / d^T (F + damping I) d)          (step_size)
    for i in 0 .. max_backtracks - 1:
        theta' = theta + beta d
        if KL(pi_old || pi_theta') < max_kl and L(theta') < L(theta): accept theta'
        beta  <- backtrack_coeff beta
    none accepted: keep theta (step_size 0)
    critic: optim_critic_iters optimizer steps on mean((R - V(s))^2), as NPG

``backtracks`` (logged) counts the rejected trials of each step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDictBase
from torch.distributions import Distribution
from typing_extensions import Unpack

from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.modelfree.npg import NPG, NPGParams, set_flat_params

__all__ = ["TRPO"]


class TRPO(NPG):
    """TRPO: a natural-gradient step within a KL trust region, found by line search.

    :param max_kl: the bound on the mean KL divergence of one actor step.
    :param backtrack_coeff: the factor the step shrinks by after a rejected trial.
    :param max_backtracks: the number of trials of the line search.

    The other parameters are :class:`~tdrl.algorithm.modelfree.npg.NPG`'s
    (``trust_region_size`` is not used).

    >>> import gymnasium as gym
    >>> from tdrl.algorithm.policy_gradient import ActorPolicy
    >>> from tdrl.data.batch import Batch
    >>> from tdrl.utils.net import DiscreteActor, VCritic
    >>> policy = ActorPolicy(actor=DiscreteActor(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    >>> trpo = TRPO(policy=policy, critic=VCritic(4, (8,)), max_kl=0.01)
    >>> obs, act = torch.randn(16, 4), torch.randint(0, 2, (16,))
    >>> with torch.no_grad():
    ...     logp = policy.dist(obs)[0].log_prob(act)
    >>> td = Batch(obs=obs, act=act, adv=torch.randn(16), returns=torch.randn(16),
    ...            v_s=torch.zeros(16), logp_old=logp)
    >>> out = trpo.actor_step(td)
    >>> bool(out["kl"] < 0.01), bool(out["step_size"] > 0)
    (True, True)
    """

    def __init__(
        self,
        *,
        max_kl: float = 0.01,
        backtrack_coeff: float = 0.8,
        max_backtracks: int = 10,
        **kwargs: Unpack[NPGParams],
    ) -> None:
        if not max_kl > 0:
            raise ValueError(f"max_kl: expected a value > 0, got {max_kl}")
        if not 0 < backtrack_coeff < 1:
            raise ValueError(f"backtrack_coeff: expected a value in (0, 1), got {backtrack_coeff}")
        require_at_least(1, max_backtracks=max_backtracks)
        super().__init__(**kwargs)
        self.max_kl = max_kl
        self.backtrack_coeff = backtrack_coeff
        self.max_backtracks = max_backtracks

    def surrogate(self, td: TensorDictBase, dist: Distribution) -> torch.Tensor:
        """TRPO's policy loss under ``dist``: ``-mean(exp(log pi(a | s) - logp_old) A)``
        (one ratio per action dimension for a per-dimension distribution)."""
        logp = self.log_prob(dist, self.act_of(td))
        n = logp.shape[0]
        ratio = (logp.reshape(n, -1) - td["logp_old"].reshape(n, -1)).exp().float()
        return -(ratio * td["adv"].reshape(n, 1)).mean()

    def step_along(
        self,
        td: TensorDictBase,
        old: Distribution,
        params: Sequence[torch.Tensor],
        flat: torch.Tensor,
        direction: torch.Tensor,
        fvp: Callable[[torch.Tensor], torch.Tensor],
        loss: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """The largest step of the quadratic KL model, then the backtracking line search;
        returns ``kl``, the accepted ``step_size`` (0: none) and ``backtracks``."""
        shs = (direction * fvp(direction)).sum()
        zero = flat.new_zeros(())
        if not shs > 0:  # a zero policy gradient: no direction to step along
            return {"kl": zero, "step_size": zero, "backtracks": zero}
        step = torch.sqrt(2 * self.max_kl / shs)
        for i in range(self.max_backtracks):
            set_flat_params(params, flat + step * direction)
            with torch.no_grad():
                dist = self.policy.dist(self.obs_of(td))[0]
                new_loss = self.surrogate(td, dist)
                kl = self.kl(td, old, dist)
            if kl < self.max_kl and new_loss < loss:
                return {"kl": kl, "step_size": step, "backtracks": flat.new_tensor(float(i))}
            if i < self.max_backtracks - 1:
                step = step * self.backtrack_coeff
        set_flat_params(params, flat)  # no trial accepted: keep the actor
        fails = flat.new_tensor(float(self.max_backtracks))
        return {"kl": kl, "step_size": zero, "backtracks": fails}
