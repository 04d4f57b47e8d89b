"""Running mean/std normalizers as modules (their statistics are checkpointed buffers).

:class:`RunningNorm` keeps running moments with the parallel (Chan et al.) update, like
Tianshou's ``RunningMeanStd``, but as ``nn.Module`` buffers, so ``state_dict()`` saves
them. :class:`ObsNormalizer` puts one in front of a network. :class:`VectorEnvNormObs`
normalizes a vector env's observations, as Tianshou's wrapper of that name (what its
on-policy MuJoCo examples train with).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import torch
from torch import nn

__all__ = ["TIANSHOU_EPS", "ObsNormalizer", "RunningNorm", "VectorEnvNormObs"]

TIANSHOU_EPS: float = float(np.finfo(np.float32).eps)
"""The variance epsilon of Tianshou's ``RunningMeanStd`` (float32's machine epsilon)."""


class RunningNorm(nn.Module):
    """Running mean and variance of a stream of batches of shape ``[B, *shape]``.

    :param shape: the shape of one sample.
    :param clip: clip normalized values to ``[-clip, clip]`` in :meth:`normalize`.
    :param eps: added to the variance before the square root.

    >>> rn = RunningNorm(())
    >>> rn.update(torch.tensor([1.0, 2.0, 3.0])); rn.update(torch.tensor([4.0]))
    >>> round(rn.mean.item(), 4), round(rn.var.item(), 4), int(rn.count.item())
    (2.5, 1.25, 4)
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: int | Sequence[int] = (), clip: float = 10.0, eps: float = 1e-8):
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.clip = clip
        self.eps = eps

    @torch.no_grad()
    def update(self, x: torch.Tensor | np.ndarray) -> None:
        """Fold a batch ``x`` (leading dimension = samples) into the statistics.

        A NumPy batch with the statistics on the CPU is folded in with NumPy (a few times
        faster for the small batches of a vector env step).
        """
        if not isinstance(x, np.ndarray):
            x = torch.as_tensor(x, dtype=torch.float64, device=self.mean.device)
        shape = tuple(self.mean.shape)
        if shape and tuple(x.shape[-len(shape) :]) != shape:
            raise ValueError(
                f"x: expected samples of shape {shape}, got a batch of {tuple(x.shape)}"
            )
        if isinstance(x, np.ndarray) and self.mean.device.type == "cpu":
            self._update_numpy(x.astype(np.float64, copy=False).reshape(-1, *shape))
            return
        x = torch.as_tensor(x, dtype=torch.float64, device=self.mean.device)
        x = x.reshape(-1, *shape)
        n = x.shape[0]
        if n == 0:
            return
        b_mean = x.mean(0)
        b_var = x.var(0, unbiased=False)
        if self.count == 0:
            self.mean.copy_(b_mean)
            self.var.copy_(b_var)
            self.count.fill_(n)
            return
        total = self.count + n
        delta = b_mean - self.mean
        m2 = self.var * self.count + b_var * n + delta.pow(2) * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def _update_numpy(self, x: np.ndarray) -> None:
        """:meth:`update`'s arithmetic on NumPy views of the (CPU) buffers."""
        n = x.shape[0]
        if n == 0:
            return
        mean, var, count = self.mean.numpy(), self.var.numpy(), self.count.numpy()
        b_mean, b_var = x.mean(0), x.var(0)
        c = float(count)
        if c == 0:
            mean[...], var[...], count[...] = b_mean, b_var, n
            return
        total = c + n
        delta = b_mean - mean
        m2 = var * c + b_var * n + delta**2 * c * n / total
        mean += delta * n / total
        var[...] = m2 / total
        count[...] = total

    def std(self, eps: float | None = None) -> float:
        """``sqrt(var + eps)`` as a float (scalar statistics only)."""
        return float(torch.sqrt(self.var + (self.eps if eps is None else eps)))

    @overload
    def normalize(self, x: torch.Tensor) -> torch.Tensor: ...
    @overload
    def normalize(self, x: np.ndarray) -> np.ndarray: ...
    def normalize(self, x: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        """``clip((x - mean) / sqrt(var + eps))``: a tensor in ``x``'s dtype, or for a
        NumPy ``x`` (statistics on the CPU) a float64 array."""
        if isinstance(x, np.ndarray) and self.mean.device.type == "cpu":
            mean, var = self.mean.numpy(), self.var.numpy()
            return np.clip((x - mean) / np.sqrt(var + self.eps), -self.clip, self.clip)
        t = torch.as_tensor(x, device=self.mean.device)
        y = (t - self.mean.to(t.dtype)) / torch.sqrt(self.var + self.eps).to(t.dtype)
        return y.clamp(-self.clip, self.clip)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same as :meth:`normalize`."""
        return self.normalize(x)


class ObsNormalizer(nn.Module):
    """``net(normalize(obs))``; statistics update when ``update_stats`` is on.

    Updates happen only under ``torch.inference_mode()`` (the collector acts in it;
    gradient steps and ``no_grad`` target computations do not), so training on replayed
    data leaves the statistics alone. Turn ``update_stats`` off for evaluation.

    >>> m = ObsNormalizer(nn.Identity(), 2)
    >>> with torch.inference_mode():
    ...     _ = m(torch.tensor([[0.0, 10.0], [2.0, 30.0]]))
    >>> m.norm.mean.tolist()
    [1.0, 20.0]
    """

    def __init__(self, net: nn.Module, shape: int | Sequence[int], clip: float = 10.0):
        super().__init__()
        self.net = net
        self.norm = RunningNorm(shape, clip=clip)
        self.update_stats = True

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalize ``obs`` (updating statistics first when allowed) and apply ``net``."""
        obs = torch.as_tensor(obs)
        if not obs.is_floating_point():
            obs = obs.float()
        if self.update_stats and torch.is_inference_mode_enabled():
            self.norm.update(obs)
        return self.net(self.norm.normalize(obs))


class VectorEnvNormObs:
    """Mixin for a tdrl vector env class: observations come out normalized by a running
    mean/std, Tianshou's ``VectorEnvNormObs`` (its on-policy MuJoCo examples).

    To wrap a vector env that already exists, Tianshou's ``VectorEnvNormObs(venv)``, use
    :class:`tdrl.env.NormObsVectorEnv` (this mixin in front of a vector env wrapper).

    Mix it in front of any vector env class (``class C(VectorEnvNormObs, DummyVectorEnv)``);
    the env is still an instance of that class (collector checkpoints snapshot in-process
    envs as usual). ``reset`` and ``step`` first fold the raw observations they return into
    :attr:`obs_rms` (when :attr:`update_obs_rms` is on: one batch per call, over the envs
    that call returned, terminal observations included), then return
    ``clip((obs - mean) / sqrt(var + eps), -10, 10)`` in the observation's dtype (computed
    in float64). Test envs share the training envs' statistics, frozen:
    ``C(fns, obs_rms=train.obs_rms, update_obs_rms=False)``; the statistics are a
    :class:`RunningNorm` module, so any module holding it checkpoints them.

    :param obs_rms: the statistics to use (default: new ones of the observation space's
        shape, with Tianshou's clip 10 and epsilon :data:`TIANSHOU_EPS`).
    :param update_obs_rms: update the statistics with every observation returned.

    Other arguments go to the vector env class.

    >>> import gymnasium as gym
    >>> from tdrl.env import DummyVectorEnv
    >>> class NormDummy(VectorEnvNormObs, DummyVectorEnv):
    ...     pass
    >>> fns = [lambda: gym.make("Pendulum-v1")] * 2
    >>> train = NormDummy(fns)
    >>> test = NormDummy(fns, obs_rms=train.obs_rms, update_obs_rms=False)
    >>> obs, _ = train.reset(seed=0)  # two samples: each one std from their mean
    >>> np.abs(obs).round(3).tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    >>> obs, *_ = train.step(np.zeros((2, 1)))
    >>> int(train.obs_rms.count), obs.dtype
    (4, dtype('float32'))
    >>> _ = test.reset(seed=1); int(test.obs_rms.count)  # shared, frozen at test
    4
    """

    obs_rms: RunningNorm
    update_obs_rms: bool

    def __init__(
        self,
        *args: Any,
        obs_rms: RunningNorm | None = None,
        update_obs_rms: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if obs_rms is None:
            space = self.observation_space[0]  # type: ignore[attr-defined]
            if not isinstance(getattr(space, "shape", None), tuple) or not space.shape:
                raise TypeError(
                    f"observation_space: expected an array space (Box) to normalize, got {space}"
                )
            obs_rms = RunningNorm(space.shape, clip=10.0, eps=TIANSHOU_EPS)
        self.obs_rms = obs_rms
        self.update_obs_rms = update_obs_rms

    def set_obs_rms(self, obs_rms: RunningNorm) -> None:
        """Normalize with ``obs_rms`` from now on (e.g. statistics restored from a file)."""
        self.obs_rms = obs_rms

    def get_obs_rms(self) -> RunningNorm:
        """The statistics this env normalizes with."""
        return self.obs_rms

    def _norm_obs(self, obs: Any) -> Any:
        raw = np.asarray(obs)
        x = raw.astype(np.float64, copy=False)
        if self.update_obs_rms:
            self.obs_rms.update(x)
        y = self.obs_rms.normalize(x)
        out = y.cpu().numpy() if isinstance(y, torch.Tensor) else y
        return out.astype(raw.dtype, copy=False) if raw.dtype.kind == "f" else out

    def reset(
        self, env_id: Any = None, seed: Any = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, np.ndarray]:
        """The wrapped ``reset``, observations normalized (statistics updated first)."""
        obs, info = super().reset(env_id, seed=seed, options=options)  # type: ignore[misc]
        return self._norm_obs(obs), info

    def step(self, action: Any, env_id: Any = None, *, id: Any = None) -> Any:
        """The wrapped ``step``, observations normalized (statistics updated first); ``id``
        is Tianshou's name for ``env_id``."""
        alias = {} if id is None else {"id": id}
        obs, *rest = super().step(action, env_id, **alias)  # type: ignore[misc]
        return (self._norm_obs(obs), *rest)
