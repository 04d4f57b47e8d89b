"""Posterior Sampling for Reinforcement Learning on tabular MDPs (Strens, ICML 2000).

PSRL keeps a posterior over the MDP, samples one MDP from it, acts optimally in the
sample until the next update, and folds the new transitions into the posterior::

    prior:  P(. | s, a) ~ Dirichlet(alpha_0(s, a, .)),   r(s, a) ~ Normal(mu_0, sigma_0)
    repeat
        P~ ~ Dirichlet(alpha),  r~ ~ Normal(mu, sigma)          (sample an MDP)
        Q(s, a) = r~(s, a) + gamma sum_s' P~(s' | s, a) V(s')   (value iteration to
        V(s) = max_a Q(s, a)                                     relative precision eps,
        pi(s) = argmax_a (Q(s, a) + eps * noise)                 warm-started, ties broken
                                                                 by a tiny random term)
        collect with pi; from the batch's counts n(s, a, s'), sums and squared sums:
        alpha += n(s, a, .)
        N' = N + n(s, a);  mu = (mu N + sum r) / N'
        sigma = sqrt(1 / (N' / (max(E[r^2] - mu^2, 0) + eps32) + 1 / sigma_0^2))

with ``N`` starting at ``eps`` (the prior mean carries almost no weight) and ``E[r^2]`` the
squared sum over ``N'``, as Tianshou's PSRL (the clamp at 0 is tdrl's: Tianshou's ``sigma``
is NaN where the difference goes negative, which a nonzero prior mean causes). The sampled
MDP is solved lazily, on the first action after an update. There is no gradient: the
posterior update is the whole learning step. The policy's ``act`` follows the MDP sampled
last, so test episodes run the same sample as training.

Randomness: the transition sample uses torch's RNG (``Dirichlet``), the reward sample and
the tie-breaking noise NumPy's global RNG, in Tianshou's order, so a seeded run samples the
same MDPs as Tianshou's.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from tdrl.algorithm.algorithm_base import Algorithm
from tdrl.algorithm.checks import require_instance, require_unit
from tdrl.algorithm.policy import Policy, make_batch
from tdrl.data.batch import Batch

__all__ = ["PSRL", "PSRLModel", "PSRLPolicy", "value_iteration"]


def value_iteration(
    trans_prob: np.ndarray, rew: np.ndarray, gamma: float, eps: float, value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Solve an MDP by value iteration; return ``(greedy policy [S], values [S])``.

    Iterates ``V <- max_a (r + gamma P V)`` from ``value`` until successive values agree
    to relative precision ``eps`` (``np.allclose(new, old, rtol=eps)``), then breaks ties
    in ``Q`` with ``eps``-scaled Gaussian noise (NumPy's global RNG).

    :param trans_prob: ``[S, A, S]`` transition probabilities.
    :param rew: ``[S, A]`` expected rewards.
    :param gamma: discount factor.
    :param eps: relative precision (and tie-breaking noise scale).
    :param value: ``[S]`` initial values.

    >>> p = np.zeros((2, 2, 2)); p[:, 0, 0] = 1.0; p[:, 1, 1] = 1.0  # action a -> state a
    >>> pi, v = value_iteration(p, np.array([[0.0, 1.0], [0.0, 1.0]]), 0.5, 1e-6, np.zeros(2))
    >>> pi.tolist(), np.round(v, 4).tolist()
    ([1, 1], [2.0, 2.0])
    """
    q = rew + gamma * trans_prob.dot(value)
    new_value = q.max(axis=1)
    while not np.allclose(new_value, value, eps):
        value = new_value
        q = rew + gamma * trans_prob.dot(value)
        new_value = q.max(axis=1)
    q = q + eps * np.random.randn(*q.shape)
    return q.argmax(axis=1), new_value


class PSRLModel(nn.Module):
    """The posterior over a tabular MDP and the policy solved for its last sample.

    The posterior and the solved policy are buffers (float64), so they are checkpointed
    with the algorithm.

    :param trans_count_prior: ``[S, A, S]`` Dirichlet concentrations (> 0).
    :param rew_mean_prior: ``[S, A]`` means of the Normal reward priors.
    :param rew_std_prior: ``[S, A]`` standard deviations of the reward priors (> 0).
    :param gamma: discount factor of value iteration.
    :param epsilon: precision of value iteration and weight of the prior mean.

    >>> m = PSRLModel(np.ones((3, 2, 3)), np.zeros((3, 2)), np.ones((3, 2)), 0.9, 0.01)
    >>> m.n_state, m.n_action, m.trans_count.dtype
    (3, 2, torch.float64)
    >>> PSRLModel(np.ones((3, 2, 3)), np.zeros((3, 2)), -np.ones((3, 2)), 0.9, 0.01)
    Traceback (most recent call last):
    ...
    ValueError: rew_std_prior: expected values > 0, got min -1.0
    """

    trans_count: torch.Tensor
    rew_mean: torch.Tensor
    rew_std: torch.Tensor
    rew_square_sum: torch.Tensor
    rew_count: torch.Tensor
    rew_std_prior: torch.Tensor
    value: torch.Tensor
    act_table: torch.Tensor
    solved: torch.Tensor

    def __init__(
        self,
        trans_count_prior: np.ndarray | torch.Tensor,
        rew_mean_prior: np.ndarray | torch.Tensor,
        rew_std_prior: np.ndarray | torch.Tensor,
        gamma: float,
        epsilon: float,
    ) -> None:
        super().__init__()

        def f64(x: Any) -> torch.Tensor:
            return torch.as_tensor(np.asarray(x, dtype=np.float64)).clone()

        tc, mu, sd = f64(trans_count_prior), f64(rew_mean_prior), f64(rew_std_prior)
        if mu.dim() != 2:
            raise ValueError(f"rew_mean_prior: expected shape [S, A], got {tuple(mu.shape)}")
        n_s, n_a = mu.shape
        if tuple(tc.shape) != (n_s, n_a, n_s):
            raise ValueError(
                f"trans_count_prior: expected shape {(n_s, n_a, n_s)}, got {tuple(tc.shape)}"
            )
        if tuple(sd.shape) != (n_s, n_a):
            raise ValueError(f"rew_std_prior: expected shape {(n_s, n_a)}, got {tuple(sd.shape)}")
        if not bool((tc > 0).all()):
            raise ValueError(f"trans_count_prior: expected values > 0, got min {tc.min().item()}")
        if not bool((sd > 0).all()):
            raise ValueError(f"rew_std_prior: expected values > 0, got min {sd.min().item()}")
        require_unit(gamma=gamma)
        if not epsilon > 0:
            raise ValueError(f"epsilon: expected a value > 0, got {epsilon}")
        self.n_state, self.n_action = int(n_s), int(n_a)
        self.gamma, self.eps = float(gamma), float(epsilon)
        self.register_buffer("trans_count", tc)
        self.register_buffer("rew_mean", mu)
        self.register_buffer("rew_std", sd.clone())
        self.register_buffer("rew_std_prior", sd)
        self.register_buffer("rew_square_sum", torch.zeros_like(mu))
        self.register_buffer("rew_count", torch.full_like(mu, self.eps))  # no prior weight
        self.register_buffer("value", torch.zeros(n_s, dtype=torch.float64))
        self.register_buffer("act_table", torch.zeros(n_s, dtype=torch.long))
        self.register_buffer("solved", torch.zeros((), dtype=torch.bool))

    def observe(
        self,
        trans_count: torch.Tensor,
        rew_sum: torch.Tensor,
        rew_square_sum: torch.Tensor,
        rew_count: torch.Tensor,
    ) -> None:
        """Fold a batch's counts ``[S, A, S]`` and reward sums ``[S, A]`` into the posterior;
        the next action solves a newly sampled MDP."""
        self.solved.fill_(False)
        self.trans_count += trans_count
        total = self.rew_count + rew_count
        self.rew_mean.copy_((self.rew_mean * self.rew_count + rew_sum) / total)
        self.rew_square_sum += rew_square_sum
        # clamped: with a nonzero prior mean it goes negative (Tianshou: a NaN std)
        raw_var = (self.rew_square_sum / total - self.rew_mean.pow(2)).clamp_min(0.0)
        eps32 = float(np.finfo(np.float32).eps)
        self.rew_std.copy_(
            torch.sqrt(1.0 / (total / (raw_var + eps32) + 1.0 / self.rew_std_prior.pow(2)))
        )
        self.rew_count.copy_(total)

    def sample_trans_prob(self) -> np.ndarray:
        """``P~ ~ Dirichlet(alpha)``, ``[S, A, S]`` (torch's RNG)."""
        return torch.distributions.Dirichlet(self.trans_count.cpu()).sample().numpy()

    def sample_reward(self) -> np.ndarray:
        """``r~ ~ Normal(mu, sigma)``, ``[S, A]`` (NumPy's global RNG)."""
        return np.random.normal(self.rew_mean.cpu().numpy(), self.rew_std.cpu().numpy())

    def solve_policy(self) -> None:
        """Sample an MDP and solve it by :func:`value_iteration` (warm-started)."""
        act, value = value_iteration(
            self.sample_trans_prob(),
            self.sample_reward(),
            self.gamma,
            self.eps,
            self.value.cpu().numpy(),
        )
        self.act_table.copy_(torch.as_tensor(act))
        self.value.copy_(torch.as_tensor(value))
        self.solved.fill_(True)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The solved policy's actions for state indices ``obs`` (solving first if needed)."""
        if not bool(self.solved):
            self.solve_policy()
        return self.act_table[obs.to(self.act_table.device)]


class PSRLPolicy(Policy):
    """Act optimally in the MDP sampled last from the posterior (:class:`PSRLModel`).

    :param trans_count_prior: ``[S, A, S]`` Dirichlet prior counts.
    :param rew_mean_prior: ``[S, A]`` reward prior means.
    :param rew_std_prior: ``[S, A]`` reward prior standard deviations.
    :param action_space: a ``Discrete`` space of ``A`` actions.
    :param discount_factor: gamma of value iteration.
    :param epsilon: precision of value iteration.
    :param observation_space: a ``Discrete`` space of ``S`` states (optional).

    Observations are state indices ``[B]`` (or one-hot ``[B, S]``, TorchRL's encoding of a
    ``Discrete`` space).

    >>> p = PSRLPolicy(trans_count_prior=np.ones((5, 2, 5)), rew_mean_prior=np.zeros((5, 2)),
    ...                rew_std_prior=np.ones((5, 2)), action_space=gym.spaces.Discrete(2))
    >>> p(make_batch({"obs": torch.tensor([0, 4])}, 2))["act"].shape
    torch.Size([2])
    """

    def __init__(
        self,
        *,
        trans_count_prior: np.ndarray | torch.Tensor,
        rew_mean_prior: np.ndarray | torch.Tensor,
        rew_std_prior: np.ndarray | torch.Tensor,
        action_space: gym.Space,
        discount_factor: float = 0.99,
        epsilon: float = 0.01,
        observation_space: gym.Space | None = None,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ValueError(
                f"action_space: PSRL needs a Discrete action space, got {action_space}"
            )
        if observation_space is not None and not isinstance(observation_space, gym.spaces.Discrete):
            raise ValueError(
                f"observation_space: PSRL needs a Discrete observation space, "
                f"got {observation_space}"
            )
        super().__init__(action_space, observation_space, action_bound_method=None)
        self.model = PSRLModel(
            trans_count_prior, rew_mean_prior, rew_std_prior, discount_factor, epsilon
        )
        if self.model.n_action != int(action_space.n):
            raise ValueError(
                f"rew_mean_prior: expected {int(action_space.n)} actions (the action space's), "
                f"got {self.model.n_action}"
            )

    def state_index(self, obs: torch.Tensor) -> torch.Tensor:
        """State indices ``[B]`` from indices or one-hot rows."""
        obs = torch.as_tensor(obs)
        if obs.dim() > 1:  # one-hot (TorchRL)
            return obs.reshape(obs.shape[0], -1).argmax(-1)
        return obs.long()

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """``act = pi(obs)`` of the MDP sampled last."""
        obs = self.state_index(batch["obs"])
        return make_batch({"act": self.model(obs)}, obs.shape[0])


class PSRL(Algorithm):
    """PSRL: a Bayesian posterior update per collect; see the module docstring.

    :param policy: a :class:`PSRLPolicy`.
    :param add_done_loop: after a ``done`` step, add a self-loop at its next state for every
        action (one transition count and one reward count of 0 each), as Tianshou's option.

    On-policy: :meth:`update` counts every transition in the buffer (``batch_size`` and
    ``repeat`` are ignored). ``forward(td)`` (TorchRL) folds the batch into the posterior
    too and returns the statistics ``psrl_rew_mean`` / ``psrl_rew_std``; there are no
    ``loss_*`` terms and no optimizer.

    >>> pol = PSRLPolicy(trans_count_prior=np.ones((2, 2, 2)), rew_mean_prior=np.zeros((2, 2)),
    ...                  rew_std_prior=np.ones((2, 2)), action_space=gym.spaces.Discrete(2))
    >>> alg = PSRL(policy=pol)
    >>> td = TensorDict({"obs": torch.tensor([0, 0]), "act": torch.tensor([1, 1]),
    ...     "obs_next": torch.tensor([1, 1]), "rew": torch.tensor([1.0, 3.0]),
    ...     "done": torch.tensor([False, False])}, [2])
    >>> out = alg(td)
    >>> pol.model.trans_count[0, 1].tolist(), round(pol.model.rew_mean[0, 1].item(), 3)
    ([1.0, 3.0], 1.99)
    """

    on_policy = True
    policy: PSRLPolicy
    posterior_updates: ClassVar[int] = 0
    """Posterior updates made in this process by every PSRL (its learning steps: PSRL has
    no gradient steps; the conformance runner reads it beside ``GradStep.taken``)."""

    def __init__(self, *, policy: PSRLPolicy, add_done_loop: bool = False) -> None:
        require_instance("policy", policy, PSRLPolicy)
        super().__init__(policy)
        self.add_done_loop = add_done_loop
        self._add_stage(self.posterior_update)

    @property
    def model(self) -> PSRLModel:
        """The posterior (``policy.model``)."""
        return self.policy.model

    def counts(
        self, td: TensorDictBase
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(n(s, a, s'), sum r, sum r^2, n(s, a))`` of a batch of transitions."""
        m = self.model
        n_s, n_a = m.n_state, m.n_action
        obs = self.policy.state_index(self.obs_of(td)).reshape(-1)
        act = self._get(td, self.tensor_keys.action, "action")
        act = (act.reshape(act.shape[0], -1).argmax(-1) if act.dim() > 1 else act).long()
        nxt = self.policy.state_index(self._get(td, self.next_obs_key, "next observation"))
        rew = self._get(td, self.reward_key, "reward").reshape(-1).to(torch.float64)
        dev = m.trans_count.device
        obs, act, nxt, rew = obs.to(dev), act.to(dev), nxt.to(dev), rew.to(dev)

        def zeros(*shape: int) -> torch.Tensor:
            return torch.zeros(shape, dtype=torch.float64, device=dev)

        one = torch.ones(obs.shape[0], dtype=torch.float64, device=dev)
        trans = zeros(n_s, n_a, n_s).index_put_((obs, act, nxt), one, accumulate=True)
        rew_sum = zeros(n_s, n_a).index_put_((obs, act), rew, accumulate=True)
        rew_sq = zeros(n_s, n_a).index_put_((obs, act), rew * rew, accumulate=True)
        rew_count = zeros(n_s, n_a).index_put_((obs, act), one, accumulate=True)
        if self.add_done_loop:  # a self-loop at each episode's last state, every action
            done = self._get(td, self._next_key("done"), "done").reshape(-1).to(dev).bool()
            ends = nxt[done]
            k = torch.ones(ends.shape[0], dtype=torch.float64, device=dev)
            for a in range(n_a):
                col = torch.full_like(ends, a)
                trans.index_put_((ends, col, ends), k, accumulate=True)
                rew_count.index_put_((ends, col), k, accumulate=True)
        return trans, rew_sum, rew_sq, rew_count

    def posterior_update(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Fold the batch into the posterior; return ``psrl_rew_mean`` / ``psrl_rew_std``
        (the posterior's mean reward mean and mean reward standard deviation)."""
        with torch.no_grad():
            self.model.observe(*self.counts(td))
        PSRL.posterior_updates += 1
        return {
            "psrl_rew_mean": self.model.rew_mean.mean().float(),
            "psrl_rew_std": self.model.rew_std.mean().float(),
        }

    def forward(self, td: TensorDictBase) -> TensorDict:
        """Fold a (TorchRL-layout or tdrl) batch into the posterior; return its statistics."""
        if td.batch_dims > 1:
            td = td.reshape(-1)
        return super().forward(td)
