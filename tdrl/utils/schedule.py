"""Learning-rate schedules for :meth:`~tdrl.algorithm.optim.OptimizerFactory.with_lr_scheduler`.

Plain Python at import time (torch is imported when a scheduler is built), so the preset
modules that name a schedule stay importable without torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["linear_lr_decay"]


def _linear_factor(n_updates: int, total: int) -> float:
    """``1 - n / total``, clamped at 0."""
    return max(0.0, 1.0 - n_updates / total)


def _linear_scheduler(optim: torch.optim.Optimizer, total: int) -> Any:
    from torch.optim.lr_scheduler import LambdaLR

    return LambdaLR(optim, functools.partial(_linear_factor, total=total))


def linear_lr_decay(total_updates: int) -> Callable[[torch.optim.Optimizer], Any]:
    """``optimizer -> LambdaLR`` decaying the learning rate linearly from its initial value
    to 0 over ``total_updates`` scheduler steps (algorithms step their schedulers once per
    ``update``), for :meth:`~tdrl.algorithm.optim.OptimizerFactory.with_lr_scheduler`.

    Tianshou's ``LRSchedulerFactoryLinear`` (``lr * (1 - n / total)``), clamped at 0 past
    the end. The factor is computed from ``total_updates`` only (not saved in the
    scheduler's ``state_dict``, which keeps the step count), so a run resumed with more
    epochs decays over its new length.

    >>> import torch
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    >>> sched = linear_lr_decay(4)(opt)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(opt.param_groups[0]["lr"]); opt.step(); sched.step()
    >>> lrs
    [1.0, 0.75, 0.5, 0.25, 0.0]
    """
    if not isinstance(total_updates, int) or total_updates < 1:
        raise ValueError(f"total_updates: expected an int >= 1, got {total_updates!r}")
    return functools.partial(_linear_scheduler, total=total_updates)
