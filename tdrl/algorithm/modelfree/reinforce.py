"""REINFORCE: the vanilla policy gradient with Monte-Carlo returns (Williams, 1992).

The rollout handling (the whole buffer in chronological order, shuffled minibatch epochs
with Tianshou's merge-last rule) is :class:`~tdrl.algorithm.policy_gradient.OnPolicyAlgorithm`'s,
without a critic. Per update::

    G_t  = sum_{k >= 0} gamma^k r_{t+k}           (discounted return to the episode's end;
                                                    an episode cut by a time limit or by the
                                                    end of collection is bootstrapped with
                                                    the running mean of returns, 0 without
                                                    standardization)
    G_t <- (G_t - mean G) / sqrt(var G + eps)      (optional: running statistics of the
                                                    returns of earlier updates; then they
                                                    absorb this update's returns)
    repeat epochs, for each minibatch B:
        L = -mean_{t in B} log pi(a_t | s_t) G_t    (per action dimension for a
                                                     per-dimension distribution)
        one optimizer step on the actor

On a TorchRL batch (:meth:`Reinforce.prepare`) ``G`` is the discounted reward-to-go along
the batch's time dimension, cut at ``done``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from tdrl.algorithm.optim import OptimizerFactory
from tdrl.algorithm.policy_gradient import (
    ActorPolicy,
    OnPolicyAlgorithm,
    ProbabilisticActorPolicy,
    default_dist_fn,
)
from tdrl.algorithm.returns import compute_episodic_return
from tdrl.data.batch import Batch

__all__ = ["ActorPolicy", "ProbabilisticActorPolicy", "Reinforce", "default_dist_fn"]


class Reinforce(OnPolicyAlgorithm):
    """REINFORCE (vanilla policy gradient) with optional return standardization.

    :param policy: an :class:`ActorPolicy`.
    :param optim: optimizer factory (or Adam learning rate) for the actor.
    :param gamma: discount factor in ``[0, 1]``.
    :param return_standardization: standardize the returns by the running mean and
        standard deviation of the returns of earlier updates (Tianshou's
        ``return_standardization``; unfinished episodes are then bootstrapped with the
        running mean).
    :param max_grad_norm: clip the gradient norm (``None``: off, as Tianshou).

    >>> import gymnasium as gym
    >>> from tdrl.data.buffer import VectorReplayBuffer
    >>> policy = ActorPolicy(actor=torch.nn.Linear(3, 2), action_space=gym.spaces.Discrete(2))
    >>> alg = Reinforce(policy=policy, optim=1e-2, gamma=0.5)
    >>> buf = VectorReplayBuffer(8, 1)
    >>> for t in range(3):
    ...     _ = buf.add(Batch(obs=torch.zeros(1, 3), act=torch.zeros(1, dtype=torch.long),
    ...                       rew=torch.ones(1), terminated=torch.tensor([t == 2]),
    ...                       truncated=torch.tensor([False]), obs_next=torch.zeros(1, 3)))
    >>> idx = buf.sample_indices(0)
    >>> alg.preprocess(buf[idx], buf, idx)["returns"].tolist()
    [1.75, 1.5, 1.0]
    >>> sorted(k for k in alg.update(buf, batch_size=None) if k.startswith("loss"))
    ['loss', 'loss_actor']
    """

    def __init__(
        self,
        *,
        policy: ActorPolicy,
        optim: OptimizerFactory | float = 1e-3,
        gamma: float = 0.99,
        return_standardization: bool = False,
        max_grad_norm: float | None = None,
    ) -> None:
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"max_grad_norm: expected a value > 0 or None, got {max_grad_norm}")
        super().__init__(policy=policy, critic=None, gamma=gamma, gae_lambda=1.0)
        self.return_standardization = return_standardization
        self.optim = self._create_optimizer(policy.actor, optim, max_grad_norm)
        self._add_stage(self.pg_losses, ("loss_actor", self.optim))

    # -- returns ------------------------------------------------------------------------
    @torch.no_grad()
    def add_discounted_returns(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Set ``batch["returns"]``: the discounted Monte-Carlo returns, standardized if asked.

        Chains end at every done and at the buffer's unfinished indices; a chain that did
        not terminate is bootstrapped with the running mean of returns (0 until
        standardization has seen returns). With ``return_standardization`` the returns
        are ``(G - mean) / sqrt(var + eps)`` with the running statistics, which then
        absorb ``G``.
        """
        mean = float(self.ret_rms.mean)
        v = torch.full((batch.shape[0],), mean, dtype=torch.float64)
        returns, _ = compute_episodic_return(
            batch, buffer, indices, v_s_=v, v_s=v, gamma=self.gamma, gae_lambda=1.0
        )
        if self.return_standardization:
            std = self.ret_rms.std(self._eps)
            batch["returns"] = ((returns - mean) / std).float()
            self.ret_rms.update(returns)
        else:
            batch["returns"] = returns.float()
        return batch

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add ``returns`` (no value or old log-probability passes: REINFORCE uses neither)."""
        return self.add_discounted_returns(batch, buffer, indices)

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """For a TorchRL batch without ``returns``: the discounted reward-to-go along the
        time dimension (the last batch dimension, as a TorchRL collector delivers
        trajectories), cut at ``done`` and not bootstrapped (TorchRL's ``reward2go``).

        Pass the collector's batch as it comes (``[T]`` or ``[N, T]``), not a shuffled
        sample; the loss then sees it flattened. Return standardization applies on tdrl's
        own path (:meth:`update`) only.
        """
        if "returns" not in td:
            from torchrl.objectives.value.functional import reward2go

            rew = self._get(td, self.reward_key, "reward")
            done = self._get(td, self._next_key("done"), "done")
            shape = (*td.batch_size, 1)
            ret = reward2go(rew.reshape(shape), done.reshape(shape).bool(), self.gamma)
            td.set("returns", ret.reshape(td.batch_size))
        return td.reshape(-1) if td.batch_dims > 1 else td

    # -- loss ---------------------------------------------------------------------------
    def pg_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """``loss_actor = -mean(log pi(a | s) G)`` on a minibatch with ``obs, act, returns``;
        the policy's ``entropy`` is logged."""
        dist = self.policy.dist(self.obs_of(td))[0]
        logp = self.log_prob(dist, self.act_of(td))
        n = logp.shape[0]
        ret = td["returns"].reshape(n, 1).to(logp.dtype)
        loss = -(logp.reshape(n, -1) * ret).mean()
        return {"loss_actor": loss, "entropy": dist.entropy().mean().detach()}
