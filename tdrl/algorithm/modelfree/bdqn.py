"""Branching Dueling Q-Network, BDQ (arXiv:1711.08946): one Q head per action dimension.

An action has ``D`` dimensions of ``K`` sub-actions each; instead of ``K^D`` joint Q-values the
network (:class:`tdrl.utils.net_rainbow.BranchingQNet`) gives ``Q_d(s, a_d)`` per dimension
``d``, a shared state value plus that dimension's centred advantages, and each dimension acts
greedily on its own. All branches learn towards one shared target, the mean over the
branches of their (double-Q) bootstrap values. The n-step target, the target network and
its hard update come from :class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`; per
gradient step BDQN adds::

    a*_d = argmax_a Q_d(s', a)                       (online net; target net's own without
                                                      double-Q)
    V'   = (1/D) sum_d Q_d^target(s', a*_d)
    G    = r + gamma (1 - term) V'                   (n-step: sum_k gamma^k r_{t+k} + ...)
    td_d = G - Q_d(s, a_d)
    L    = mean_batch(w * (1/D) sum_d td_d^2)        (w: prioritized-replay weight, else 1)
    priorities <- |sum_d td_d|                       (Tianshou's BDQN)

Actions are ``MultiDiscrete``: one bin index per dimension. A continuous task is played
through :class:`tdrl.env.discretize.DiscretizeAction`, or by giving :class:`BDQNPolicy` the
``Box`` space itself with ``action_bins``: the buffer then keeps the bin indices and
:meth:`BDQNPolicy.map_action` turns them into the bins' values for the environment (the same
values as the wrapper's).

Where Tianshou 2.0.1's ``BDQN`` differs (see ``docs/differences.md``): it bootstraps with
``gamma = 0.99`` whatever ``gamma`` it was given, masks the bootstrap at every ``done``
(time-limit truncations included) and at unfinished steps, and has 1-step targets only;
tdrl uses ``gamma``, the partial-episode rules of every Q-learning algorithm (only
``terminated`` masks the bootstrap) and ``n_step``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn

from tdrl.algorithm.loss_keys import weighted_mean
from tdrl.algorithm.policy import Policy
from tdrl.algorithm.qlearning import QLearningAlgorithm, QLearningPolicy, split_mask

__all__ = ["BDQN", "BDQNPolicy"]


class BDQNPolicy(QLearningPolicy):
    """Greedy (epsilon-greedy) policy over branched Q-values ``[B, D, K]``: ``act [B, D]``.

    :param model: ``obs -> Q [B, D, K]`` (e.g. :class:`tdrl.utils.net_rainbow.BranchingQNet`).
    :param action_space: ``MultiDiscrete([K] * D)``, or a 1-D ``Box`` with ``action_bins``.
    :param observation_space: the observation space (kept for reference).
    :param action_bins: for a ``Box`` action space: ``K``, the evenly spaced bins per
        dimension, bounds included (:class:`tdrl.env.discretize.DiscretizeAction`'s values).
    :param eps_training: epsilon of :meth:`exploration_noise` inside a training step.
    :param eps_inference: epsilon outside a training step.

    With probability epsilon a whole action is replaced by one with an independent, uniformly
    random sub-action in every dimension (Tianshou's BDQN exploration).

    >>> from tdrl.algorithm.policy import make_batch
    >>> from tdrl.utils.net_rainbow import BranchingQNet
    >>> p = BDQNPolicy(model=BranchingQNet(3, 1, 5), action_space=gym.spaces.Box(-2, 2, (1,)),
    ...                action_bins=5)
    >>> act = p(make_batch({"obs": torch.zeros(2, 3)}, 2))["act"]
    >>> act.shape, p.map_action(np.array([[0], [4]])).tolist()
    (torch.Size([2, 1]), [[-2.0], [2.0]])
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_bins: int | None = None,
        eps_training: float = 0.0,
        eps_inference: float = 0.0,
    ) -> None:
        values: np.ndarray | None = None
        if isinstance(action_space, gym.spaces.MultiDiscrete):
            nvec = np.asarray(action_space.nvec).reshape(-1)
            if action_bins is not None:
                raise ValueError(
                    f"action_bins: expected None for a MultiDiscrete action space, "
                    f"got {action_bins}"
                )
            if nvec.size == 0 or not (nvec == nvec[0]).all():
                raise ValueError(
                    f"action_space: expected the same number of sub-actions in every "
                    f"dimension, got MultiDiscrete({nvec.tolist()})"
                )
            n_bins, n_branches = int(nvec[0]), int(nvec.size)
        elif isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            if isinstance(action_bins, bool) or not isinstance(action_bins, int | np.integer):
                raise ValueError(
                    f"action_bins: expected an int >= 2 for a Box action space, got {action_bins!r}"
                )
            if action_bins < 2:
                raise ValueError(f"action_bins: expected an int >= 2, got {action_bins}")
            if not (np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()):
                raise ValueError(f"action_space: expected finite bounds, got {action_space}")
            n_bins, n_branches = int(action_bins), int(action_space.shape[0])
            low, high = action_space.low.astype(np.float64), action_space.high.astype(np.float64)
            values = np.linspace(low, high, n_bins, axis=1)  # [D, K], bounds included
        else:
            raise ValueError(
                f"action_space: {type(self).__name__} needs a MultiDiscrete or a 1-D Box "
                f"action space, got {action_space}"
            )
        # QLearningPolicy accepts Discrete spaces only: set up its fields here
        Policy.__init__(self, action_space, observation_space, action_bound_method=None)
        self.model = model
        self.n_actions = n_bins
        self.num_branches = n_branches
        self.eps_training = eps_training
        self.eps_inference = eps_inference
        self._values = values  # bin values [D, K] of a Box space (None: MultiDiscrete)
        if values is not None:
            self._act_dtype = np.dtype(action_space.dtype)
            self._values_t = torch.as_tensor(values)
            self._dims = np.arange(n_branches)

    # -- actions: bin indices (stored) <-> environment values ---------------------------
    def map_action(self, act: torch.Tensor | np.ndarray) -> np.ndarray:
        """Bin indices ``[..., D]`` to the environment's action: identity for a
        ``MultiDiscrete`` space, the bins' values for a ``Box``."""
        a = act.detach().cpu().numpy() if isinstance(act, torch.Tensor) else np.asarray(act)
        if self._values is None:
            return a
        return self._values[self._dims, a.astype(np.int64)].astype(self._act_dtype)

    def map_action_inverse(self, act: torch.Tensor | np.ndarray) -> np.ndarray:
        """An environment action back to bin indices (the nearest bin for a ``Box``).

        >>> from tdrl.utils.net_rainbow import BranchingQNet
        >>> p = BDQNPolicy(model=BranchingQNet(3, 1, 5),
        ...                action_space=gym.spaces.Box(-2, 2, (1,)), action_bins=5)
        >>> p.map_action_inverse(np.array([[-1.9], [0.6], [2.0]])).ravel().tolist()
        [0, 3, 4]
        """
        a = act.detach().cpu().numpy() if isinstance(act, torch.Tensor) else np.asarray(act)
        if self._values is None:
            return a
        return np.abs(a[..., None] - self._values).argmin(-1)

    def map_action_torch(self, act: torch.Tensor) -> torch.Tensor:
        """:meth:`map_action` on a tensor (for TorchRL envs)."""
        if self._values is None:
            return act
        values = self._values_t.to(device=act.device)
        dims = torch.arange(values.shape[0], device=act.device)
        dtype = torch.from_numpy(np.zeros(0, self._act_dtype)).dtype
        return values[dims, act.long()].to(dtype)

    def map_action_inverse_torch(self, act: torch.Tensor) -> torch.Tensor:
        """:meth:`map_action_inverse` on a tensor: bin indices (``long``)."""
        if self._values is None:
            return act
        values = self._values_t.to(device=act.device, dtype=torch.float64)
        return (act.to(torch.float64).unsqueeze(-1) - values).abs().argmin(-1)

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """With probability epsilon per sample, a uniformly random sub-action per dimension
        (among the legal ones when the observation carries a ``[B, D, K]`` mask)."""
        eps = self.eps_training if self.is_within_training_step else self.eps_inference
        if eps <= 0.0:
            return act
        is_tensor = isinstance(act, torch.Tensor)
        a = act.detach().cpu().numpy().copy() if is_tensor else np.array(act, copy=True)
        n = a.shape[0]
        explore = np.random.rand(n) < eps
        _, mask = split_mask(batch.get("obs", None))
        if mask is not None:
            scores = np.random.rand(n, self.num_branches, self.n_actions) + np.asarray(mask)
            rand_act = scores.argmax(axis=-1)
        else:
            rand_act = np.random.randint(0, self.n_actions, size=(n, self.num_branches))
        a[explore] = rand_act[explore]
        return torch.from_numpy(a) if is_tensor else a


class BDQN(QLearningAlgorithm):
    """Branching dueling Q-learning: every branch regresses on the branch-mean target.

    :param policy: a :class:`BDQNPolicy`.

    The other parameters are :class:`~tdrl.algorithm.qlearning.QLearningAlgorithm`'s
    (``n_step``: Tianshou's BDQN has 1-step targets only; ``is_double``: the online network
    picks each branch's bootstrap sub-action).

    >>> from tdrl.data.batch import Batch
    >>> from tdrl.utils.net_rainbow import BranchingQNet
    >>> p = BDQNPolicy(model=BranchingQNet(3, 2, 4), action_space=gym.spaces.MultiDiscrete([4, 4]))
    >>> alg = BDQN(policy=p, gamma=0.9, target_update_freq=10)
    >>> alg.next_value(torch.zeros(5, 3)).shape
    torch.Size([5])
    >>> td = Batch(obs=torch.zeros(5, 3), act=torch.zeros(5, 2, dtype=torch.long),
    ...            returns=torch.ones(5))
    >>> sorted(alg(td).keys()), td["td_error"].shape
    (['loss_qvalue'], torch.Size([5]))
    """

    policy: BDQNPolicy
    policy_class = BDQNPolicy

    def _branch_q(self, obs: Any, model: nn.Module | None = None) -> torch.Tensor:
        """Q-values ``[B, D, K]`` (masked), checked against the action space."""
        q = self.policy.q_values(obs, model)
        want = (self.policy.num_branches, self.policy.n_actions)
        if q.dim() != 3 or tuple(q.shape[1:]) != want:
            raise ValueError(
                f"model output: expected [B, num_branches={want[0]}, "
                f"action_per_branch={want[1]}], got shape {tuple(q.shape)}"
            )
        return q

    @torch.no_grad()
    def next_value(self, obs_next: Any) -> torch.Tensor:
        """``V'(s') [B]``: the mean over branches of each branch's bootstrap value (target
        net at the online net's sub-action with double-Q, else the target's max; without a
        target net, the online max)."""
        if self.model_old is None:
            return self._branch_q(obs_next).max(dim=-1).values.mean(-1)
        q_target = self._branch_q(obs_next, self.model_old)
        if self.is_double:
            act = self._branch_q(obs_next).argmax(dim=-1, keepdim=True)
            return q_target.gather(-1, act).squeeze(-1).mean(-1)
        return q_target.max(dim=-1).values.mean(-1)

    def q_losses(self, td: TensorDictBase) -> dict[str, torch.Tensor]:
        """Mean over branches of the squared TD errors of the taken sub-actions against the
        shared ``returns``; sets ``td_error`` to their sum over branches."""
        q = self._branch_q(self.obs_of(td))
        act = self.act_of(td).long().reshape(q.shape[0], q.shape[1], 1)
        q_a = q.gather(-1, act).squeeze(-1)  # [B, D]
        returns = td["returns"].reshape(-1, 1).to(q_a.dtype)
        td_error = returns - q_a
        per = td_error.pow(2).mean(-1)
        td.set("td_error", td_error.sum(-1).detach())
        weight = self.weights(td)
        return {"loss_qvalue": weighted_mean(per, weight, cast=True)}
