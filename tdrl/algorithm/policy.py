"""Policies: observations in, actions out.

A :class:`Policy` maps observations to actions. It is a TensorDict module
(``in_keys=["obs"]``, ``out_keys=["act"]``): ``policy(batch, state=None)`` returns a new
:class:`~tdrl.data.Batch` holding ``act`` (and ``state``, ``policy``, ``logits`` where the
algorithm has them). The collector calls it on every vector step under
``torch.inference_mode()``, so the result is built with one cheap, check-free TensorDict
construction (:func:`make_batch`).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn
from torchrl.envs.utils import ExplorationType, exploration_type

from tdrl.data.batch import Batch
from tdrl.utils.net import call_module

__all__ = [
    "ActBoundMethod",
    "Policy",
    "call_model",
    "make_batch",
    "within_training_step",
]

ActBoundMethod = Literal["clip", "tanh"] | None


def make_batch(fields: dict[str, Any], n: int) -> Batch:
    """Build a :class:`Batch` of leading dimension ``n`` from tensors, without checks.

    This is the hot-path constructor used by policies (about 1.5 µs against 5 µs for the
    checked constructor). Values that are ``None`` are dropped.

    >>> import torch
    >>> b = make_batch({"act": torch.zeros(3, dtype=torch.long), "state": None}, 3)
    >>> b["act"].shape, "state" in b
    (torch.Size([3]), False)
    """
    source = {k: v for k, v in fields.items() if v is not None}
    return Batch._new_unsafe(source, batch_size=torch.Size([n]))


@contextlib.contextmanager
def within_training_step(policy: Policy, enabled: bool = True) -> Iterator[Policy]:
    """Set ``policy.is_within_training_step`` to ``enabled`` for the duration of the block.

    >>> from gymnasium.spaces import Discrete
    >>> from tdrl.algorithm.modelfree.dqn import DQNPolicy
    >>> p = DQNPolicy(model=torch.nn.Linear(2, 2), action_space=Discrete(2))
    >>> with within_training_step(p):
    ...     p.is_within_training_step
    True
    >>> p.is_within_training_step
    False
    """
    old = policy.is_within_training_step
    policy.is_within_training_step = enabled
    try:
        yield policy
    finally:
        policy.is_within_training_step = old


def _to_numpy(act: Any) -> np.ndarray:
    if isinstance(act, torch.Tensor):
        return act.detach().cpu().numpy()
    if isinstance(act, np.ndarray):
        return act
    return np.asarray(act)


_STATEFUL: dict[type, bool] = {}


def _takes_state(model: nn.Module) -> bool:
    """Whether ``model.forward`` accepts ``state`` (Tianshou's recurrent signature)."""
    cls = type(model)
    if cls not in _STATEFUL:
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):  # builtins without a signature
            params = {}  # type: ignore[assignment]
        _STATEFUL[cls] = "state" in params
    return _STATEFUL[cls]


def call_model(model: nn.Module, obs: Any, state: Any = None, info: Any = None) -> tuple[Any, Any]:
    """Run ``model`` on ``obs``; return ``(output, new hidden state)``.

    Models with Tianshou's signature ``forward(obs, state=None, info=None)`` receive the
    hidden state and the env ``info`` and may return ``(output, state)``; plain models are
    called as ``model(obs)`` (by :func:`~tdrl.utils.net.call_module`). A returned
    ``(output, state)`` pair is split either way.

    >>> out, st = call_model(torch.nn.Linear(2, 3), torch.zeros(1, 2))
    >>> out.shape, st
    (torch.Size([1, 3]), None)
    """
    if _takes_state(model):
        out = model(obs, state=state, info=info) if info is not None else model(obs, state=state)
        if isinstance(out, tuple) and len(out) == 2:
            return out[0], out[1]
        return out, None
    out = call_module(model, obs)
    # a plain ``(loc, scale)`` pair stays whole; ``(output, None)`` and
    # ``((loc, scale), state)`` are Tianshou-style ``(output, state)`` pairs
    if isinstance(out, tuple) and len(out) == 2 and (isinstance(out[0], tuple) or out[1] is None):
        return out[0], out[1]
    return out, None


class Policy(TensorDictModuleBase):
    """Base class of all policies: observations in, actions out.

    :param action_space: the environment's action space (``Discrete``, ``MultiDiscrete``,
        ``MultiBinary`` or ``Box``).
    :param observation_space: the environment's observation space (kept for reference).
    :param action_scaling: scale a bounded raw action from ``[-1, 1]`` to the Box range in
        :meth:`map_action` (continuous spaces only).
    :param action_bound_method: ``"clip"``, ``"tanh"`` or ``None``: how :meth:`map_action`
        bounds a raw continuous action to ``[-1, 1]`` before scaling.
    :param deterministic_eval: act deterministically (distribution mode) outside a
        training step.

    Subclasses implement :meth:`forward`. ``policy.is_within_training_step`` is set by
    the trainer (or by :func:`within_training_step`).
    """

    def __init__(
        self,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = False,
        action_bound_method: ActBoundMethod = "clip",
        deterministic_eval: bool = False,
    ) -> None:
        if action_bound_method not in ("clip", "tanh", None):
            raise ValueError(
                f"action_bound_method: expected 'clip', 'tanh' or None, got {action_bound_method!r}"
            )
        discrete = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
        if isinstance(action_space, discrete):
            action_type = "discrete"
        elif isinstance(action_space, gym.spaces.Box):
            action_type = "continuous"
        else:
            raise ValueError(
                f"action_space: expected Discrete, MultiDiscrete, MultiBinary or Box, "
                f"got {type(action_space).__name__}"
            )
        if action_scaling and action_type != "continuous":
            raise ValueError(
                f"action_scaling: expected False for a {type(action_space).__name__} "
                f"action space, got True"
            )
        super().__init__()
        self.in_keys = ["obs"]
        self.out_keys = ["act"]
        self.log_prob_key: NestedKey = "action_log_prob"
        self._forced_mode: bool | None = None
        self.action_space = action_space
        self.observation_space = observation_space
        self.action_scaling = action_scaling
        self.action_bound_method = action_bound_method if action_type == "continuous" else None
        self.deterministic_eval = deterministic_eval
        self.is_within_training_step = False
        self._action_type: Literal["discrete", "continuous"] = action_type  # type: ignore[assignment]
        if action_type == "continuous":
            box: Any = action_space
            low = np.asarray(box.low, dtype=np.float64)
            high = np.asarray(box.high, dtype=np.float64)
            self._low, self._high = low, high
            scale = high - low
            eps = float(np.finfo(np.float32).eps)
            self._inv_scale = 2.0 / np.where(scale < eps, scale + eps, scale)
            self._act_dtype = np.dtype(box.dtype)

    @property
    def action_type(self) -> Literal["discrete", "continuous"]:
        """``"discrete"`` or ``"continuous"``, from the action space."""
        return self._action_type

    @property
    def deterministic(self) -> bool:
        """Whether to act deterministically now.

        Inside a TorchRL call this follows ``torchrl.envs.utils.set_exploration_type``
        (``RANDOM`` samples; ``DETERMINISTIC``, ``MODE`` and ``MEAN`` act greedily); in
        tdrl's own loop it is ``deterministic_eval`` outside a training step.
        """
        if self._forced_mode is not None:
            return self._forced_mode
        return self.deterministic_eval and not self.is_within_training_step

    def set_keys(
        self, observation: NestedKey | None = None, action: NestedKey | None = None
    ) -> Policy:
        """Read observations from ``observation`` and write actions to ``action``.

        Defaults are Tianshou's ``obs`` / ``act``; TorchRL's envs use ``observation`` /
        ``action``. Returns the policy.
        """
        if observation is not None:
            self.in_keys = [observation]
        if action is not None:
            self.out_keys = [action]
        return self

    def forward(self, batch: TensorDictBase, state: Any = None, **kwargs: Any) -> Batch:
        """Compute the action for ``batch["obs"]``; return a Batch with ``act``."""
        raise NotImplementedError

    def __call__(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        """Tianshou style for a :class:`Batch` input (a new Batch comes back); TorchRL style
        for any other TensorDict (see :meth:`act_torchrl`)."""
        if isinstance(batch, TensorDictBase) and not isinstance(batch, Batch):
            return self.act_torchrl(batch)
        return super().__call__(batch, *args, **kwargs)

    def act_torchrl(self, td: TensorDictBase) -> TensorDictBase:
        """Act on a TorchRL TensorDict in place: read ``in_keys[0]``, write ``out_keys[0]``.

        The action is written in the environment's range (:meth:`map_action_torch`), as a
        TorchRL env expects it. Sampling follows TorchRL's exploration type (``RANDOM``
        samples, ``DETERMINISTIC``/``MODE``/``MEAN`` act greedily; unset: as in tdrl's own
        loop); a sampled action's log-probability goes under ``log_prob_key``
        (``action_log_prob``). Any batch shape works, including the unbatched ``[]`` of a
        single TorchRL env.
        """
        obs = td.get(self.in_keys[0])
        lead = td.batch_size
        flat = _flatten_lead(obs, len(lead))
        n = flat.batch_size[0] if isinstance(flat, TensorDictBase) else flat.shape[0]
        mode = exploration_type()
        if mode is not None:
            self._forced_mode = mode != ExplorationType.RANDOM
        try:
            out = self.forward(make_batch({"obs": flat}, n))
        finally:
            self._forced_mode = None
        act = out["act"]
        td.set(self.out_keys[0], self.map_action_torch(act).reshape((*lead, *act.shape[1:])))
        for key, value in out.items():
            if key not in ("act", "state", "log_prob") and isinstance(value, torch.Tensor):
                td.set(key, value.reshape((*lead, *value.shape[1:])))
        sampled = mode is None or mode == ExplorationType.RANDOM
        log_prob = self.log_prob_of(out, act) if sampled else None
        if log_prob is not None:
            td.set(self.log_prob_key, log_prob.reshape(tuple(lead)))
        return td

    def log_prob_of(self, out: Batch, act: torch.Tensor) -> torch.Tensor | None:
        """Log-probability ``[B]`` of the sampled ``act`` in :meth:`forward`'s result ``out``
        (``None`` for a deterministic policy)."""
        if "log_prob" in out:
            return out["log_prob"]
        dist = getattr(out, "dist", None)
        if dist is None:
            return None
        lp = dist.log_prob(act)
        return lp.reshape(lp.shape[0], -1).sum(-1) if lp.dim() > 1 else lp

    def map_action(self, act: torch.Tensor | np.ndarray) -> np.ndarray:
        """Map a raw action (as stored in the buffer) to the environment's action range.

        Continuous spaces: bound to ``[-1, 1]`` (``clip`` or ``tanh``), then, with
        ``action_scaling``, scale linearly to ``[low, high]``. Identity for discrete spaces.

        >>> from gymnasium.spaces import Box
        >>> from tdrl.algorithm.modelfree.sac import SACPolicy
        >>> p = SACPolicy(actor=torch.nn.Linear(1, 2), action_space=Box(-2.0, 2.0, (1,)))
        >>> p.map_action(np.array([[-1.0], [0.5], [1.0]])).ravel().tolist()
        [-2.0, 1.0, 2.0]
        """
        a = _to_numpy(act)
        if self._action_type != "continuous":
            return a
        if self.action_bound_method == "clip":
            a = np.clip(a, -1.0, 1.0)
        elif self.action_bound_method == "tanh":
            a = np.tanh(a)
        if self.action_scaling:
            if self.action_bound_method is None and (a.min() < -1.0 or a.max() > 1.0):
                raise ValueError(
                    f"act: action scaling expects raw actions in [-1, 1], "
                    f"got range [{a.min()}, {a.max()}]"
                )
            a = self._low + (self._high - self._low) * (a + 1.0) / 2.0
        return a.astype(self._act_dtype, copy=False)

    def map_action_torch(self, act: torch.Tensor) -> torch.Tensor:
        """:meth:`map_action` on a tensor, staying in torch (for TorchRL envs).

        >>> from gymnasium.spaces import Box
        >>> from tdrl.algorithm.modelfree.sac import SACPolicy
        >>> p = SACPolicy(actor=torch.nn.Linear(1, 2), action_space=Box(-2.0, 2.0, (1,)))
        >>> p.map_action_torch(torch.tensor([[-1.0], [0.5]])).ravel().tolist()
        [-2.0, 1.0]
        """
        if self._action_type != "continuous":
            return act
        if self.action_bound_method == "clip":
            act = act.clamp(-1.0, 1.0)
        elif self.action_bound_method == "tanh":
            act = torch.tanh(act)
        if self.action_scaling:
            low, high = self._bounds_like(act)
            act = low + (high - low) * (act + 1.0) / 2.0
        return act

    def map_action_inverse_torch(self, act: torch.Tensor) -> torch.Tensor:
        """:meth:`map_action_inverse` on a tensor: an env action back to a raw action."""
        if self._action_type != "continuous":
            return act
        if self.action_scaling:
            low, high = self._bounds_like(act)
            act = (act - low) * (2.0 / (high - low).clamp_min(float(np.finfo(np.float32).eps)))
            act = act - 1.0
        if self.action_bound_method == "tanh":
            act = torch.atanh(act)
        return act

    def _bounds_like(self, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Box bounds as tensors of ``act``'s dtype and device (built once per pair:
        this runs on every TorchRL env step)."""
        key = (act.dtype, act.device)
        cache = self.__dict__.setdefault("_bounds_cache", {})
        if key not in cache:
            cache[key] = (
                torch.as_tensor(self._low, dtype=act.dtype, device=act.device),
                torch.as_tensor(self._high, dtype=act.dtype, device=act.device),
            )
        return cache[key]  # type: ignore[no-any-return]

    def map_action_inverse(self, act: torch.Tensor | np.ndarray) -> np.ndarray:
        """Inverse of :meth:`map_action`: an environment action back to a raw action.

        >>> from gymnasium.spaces import Box
        >>> from tdrl.algorithm.modelfree.sac import SACPolicy
        >>> p = SACPolicy(actor=torch.nn.Linear(1, 2), action_space=Box(-2.0, 2.0, (1,)))
        >>> p.map_action_inverse(np.array([[-2.0], [1.0]])).ravel().tolist()
        [-1.0, 0.5]
        """
        a = _to_numpy(act)
        if self._action_type != "continuous":
            return a
        if self.action_scaling:
            a = (a - self._low) * self._inv_scale - 1.0
        if self.action_bound_method == "tanh":
            a = (np.log(1.0 + a) - np.log(1.0 - a)) / 2.0
        return a.astype(self._act_dtype, copy=False)

    def exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Add exploration noise to ``act`` (as returned by :meth:`forward`); default: none."""
        return act

    def add_exploration_noise(self, act: Any, batch: TensorDictBase) -> Any:
        """Tianshou's name for :meth:`exploration_noise`."""
        return self.exploration_noise(act, batch)

    def compute_action(
        self, obs: Any, info: dict[str, Any] | None = None, state: Any = None
    ) -> np.ndarray | int:
        """Return the environment action for one (unbatched) observation.

        >>> from gymnasium.spaces import Discrete
        >>> from tdrl.algorithm.modelfree.dqn import DQNPolicy
        >>> lin = torch.nn.Linear(2, 3)
        >>> with torch.no_grad():
        ...     _ = lin.weight.zero_(); _ = lin.bias.copy_(torch.tensor([0.0, 2.0, 1.0]))
        >>> DQNPolicy(model=lin, action_space=Discrete(3)).compute_action(np.zeros(2))
        1
        """
        o = torch.as_tensor(np.asarray(obs))[None]
        if o.is_floating_point():
            o = o.float()
        with torch.no_grad():
            act = self.forward(make_batch({"obs": o}, 1), state=state)["act"]
        a = self.map_action(act)[0]
        if isinstance(self.action_space, gym.spaces.Discrete):
            return int(a)
        return a


def _flatten_lead(x: Any, n_lead: int) -> Any:
    """Collapse ``n_lead`` leading batch dims of a tensor (or TensorDict) into one."""
    if n_lead == 1:
        return x
    if isinstance(x, TensorDictBase):
        return x.reshape(-1) if n_lead > 1 else x.unsqueeze(0)
    return x.reshape(-1, *x.shape[n_lead:]) if n_lead > 1 else x.unsqueeze(0)


@contextlib.contextmanager
def _train_mode(module: nn.Module, policy: nn.Module) -> Iterator[None]:
    """Train mode for the update; skips the recursive walk when already in train mode."""
    if module.training and policy.training:
        yield
        return
    was = module.training
    module.train(True)
    try:
        yield
    finally:
        module.train(was)
