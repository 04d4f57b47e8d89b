"""Target networks on top of TorchRL's ``convert_to_functional`` target parameters.

TorchRL keeps target parameters in ``loss.target_<name>_params`` and updates them with
``SoftUpdate`` / ``HardUpdate``. Those updaters walk a TensorDict per step (about 120 µs
for a 3-layer MLP); the subclasses here keep the same semantics and state but do the
update with one fused ``torch._foreach_*`` call (about 10 µs). :func:`make_target_module`
gives a module that computes with the target parameters without a per-call
``to_module`` swap.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn
from torchrl.objectives import HardUpdate, SoftUpdate

__all__ = ["FastHardUpdate", "FastSoftUpdate", "make_target_module"]


def make_target_module(module: nn.Module, target_params: TensorDictBase) -> nn.Module:
    """Return a frozen, eval-mode copy of ``module`` whose tensors share ``target_params``.

    In-place changes of ``target_params`` (soft/hard updates, ``load_state_dict``) are
    seen by the returned module.

    >>> from tensordict import TensorDict
    >>> net = nn.Linear(2, 1)
    >>> tp = TensorDict.from_module(net).detach().clone()
    >>> tgt = make_target_module(net, tp)
    >>> with torch.no_grad():
    ...     _ = tp["weight"].zero_(); _ = tp["bias"].fill_(3.0)
    >>> tgt(torch.ones(1, 2)).item()
    3.0
    """
    target = copy.deepcopy(module)
    target_params.to_module(target)
    for p in target.parameters():
        p.requires_grad_(False)
    target.eval()
    return target


def _pairs(updater: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    src, tgt = [], []
    for key, p in updater._sources.items(True, True):
        key = key if isinstance(key, tuple) else (key,)
        src.append(p.data)
        tgt.append(updater._targets.get(("target_" + key[0], *key[1:])).data)
    return src, tgt


class FastSoftUpdate(SoftUpdate):
    """TorchRL's ``SoftUpdate`` (``target <- (1 - tau) * target + tau * source``), fused."""

    def __init__(self, loss_module: Any, *, tau: float) -> None:
        super().__init__(loss_module, tau=tau)
        self._src, self._tgt = _pairs(self)
        self.tau = tau

    def refresh(self) -> None:
        """Re-read the source and target tensors (after the loss was moved or cast)."""
        self._src, self._tgt = _pairs(self)

    @torch.no_grad()
    def step(self) -> None:
        """Move every target tensor a fraction ``tau`` towards its source."""
        torch._foreach_lerp_(self._tgt, self._src, self.tau)


class FastHardUpdate(HardUpdate):
    """TorchRL's ``HardUpdate``: copy sources to targets every ``interval + 1`` steps, fused."""

    counter: int

    def __init__(self, loss_module: Any, *, value_network_update_interval: float) -> None:
        super().__init__(loss_module, value_network_update_interval=value_network_update_interval)
        self._src, self._tgt = _pairs(self)

    def refresh(self) -> None:
        """Re-read the source and target tensors (after the loss was moved or cast)."""
        self._src, self._tgt = _pairs(self)

    @torch.no_grad()
    def step(self) -> None:
        """Count one step; copy the sources into the targets when the interval is reached."""
        if self.counter == self.value_network_update_interval:
            torch._foreach_copy_(self._tgt, self._src)
            self.counter = 0
        else:
            self.counter += 1
