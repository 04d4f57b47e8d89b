"""Sizes and rates of a run, checked before anything is allocated or created.

An absurd size (``--buffer-size 100000000000000000``) would otherwise end in an allocation
traceback deep inside NumPy or torch, possibly after the run directory was made; an absurd
rate (``--update-per-step 1e30``) in a run that never ends. :func:`check_sizes` raises a
one-line :class:`~tdrl.errors.UsageError` naming the flag, what was expected and what was
given, before the algorithm, the buffer or the run directory exist.

* Memory sizes are checked against what the machine can hold (its physical memory, or the
  GPU's for ``--buffer-device cuda``): the replay buffer's rows times the bytes of a row,
  the networks' parameters (with gradients, optimizer moments and target copies), a batch
  of rows with the activations of the widest layer, and the n-step index arrays of a batch.
  The estimates are coarse on purpose: they catch sizes that cannot fit, not tight ones.
* Rates and budgets given on the command line are checked against the run's env-step
  budget ``--epochs × --step-per-epoch``: a ``--step-per-collect`` larger than it, and an
  ``--update-per-step`` whose gradient steps per collect exceed it. The presets' own values
  are tuned for their full runs and are not checked (a short ``--step-per-epoch`` with a
  preset's larger ``step_per_collect`` still collects one batch per epoch).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from tdrl.errors import UsageError

__all__ = ["check_sizes", "machine_memory"]

_ROW_OVERHEAD = 64
"""Bytes per buffer row beside observations and actions: reward, flags, episode links."""

_NET_COPIES = 16
"""Parameter copies a run holds per network: weights, gradients, two Adam moments, target
networks and twin critics."""


def machine_memory(device: str | torch.device = "cpu") -> int:
    """Bytes of memory on ``device``: the machine's physical memory, or the GPU's."""
    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(dev).total_memory)
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # not POSIX: assume a large machine
        return 1 << 40


def _bytes(space: Any) -> int:
    """Bytes of one value of a gymnasium space (1 for a discrete action)."""
    shape = getattr(space, "shape", None) or ()
    dtype = getattr(space, "dtype", None)
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 8
    return max(1, math.prod(int(s) for s in shape)) * itemsize


def _dim(space: Any) -> int:
    """Features of one value of a space (its action count for a discrete one)."""
    n = getattr(space, "n", None)
    if n is not None and not getattr(space, "shape", None):
        return int(n)
    return max(1, math.prod(int(s) for s in (getattr(space, "shape", None) or ())))


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _widths(preset: Any) -> list[tuple[str, list[int]]]:
    """The preset's hidden-layer fields (``*hidden_sizes`` and ``hidden_size``) and widths."""
    out = []
    for name in sorted(vars(preset)):
        value = getattr(preset, name)
        if name.endswith("hidden_sizes") and isinstance(value, Iterable):
            out.append((name, [int(v) for v in value]))
        elif name == "hidden_size" and isinstance(value, int):
            out.append((name, [value]))
    return out


def _too_big(flag: str, what: str, need: float, have: int, got: Any) -> UsageError:
    return UsageError(
        f"{flag}: expected {what} that fits in this machine's {_human(have)} of memory, got "
        f"{got} ({_human(need)})"
    )


def _check_memory(preset: Any, obs_space: Any, act_space: Any, have: int, buffer_have: int) -> None:
    obs_b, act_b = _bytes(obs_space), _bytes(act_space)
    frames = int(getattr(preset, "frames_stack", 1) or 1)
    row = (obs_b // frames if frames > 1 else 2 * obs_b) + act_b + _ROW_OVERHEAD
    rows = int(getattr(preset, "buffer_size", 0) or 0)
    if rows * row > buffer_have:
        raise _too_big("--buffer-size", "a replay buffer", rows * row, buffer_have, rows)
    head = max(int(getattr(preset, k, 1) or 1) for k in ("num_atoms", "num_quantiles"))
    first, last = _dim(obs_space) + _dim(act_space), _dim(act_space) * head
    copies = _NET_COPIES * int(getattr(preset, "ensemble_size", 1) or 1)
    widest = 1
    for name, widths in _widths(preset):
        layers = [first, *widths, last]
        params = sum(a * b for a, b in itertools.pairwise(layers))
        if params * 4 * copies > have:
            raise _too_big(_flag(name), "a network", params * 4 * copies, have, tuple(widths))
        widest = max([widest, *widths])
    batch = int(getattr(preset, "batch_size", 0) or 0)
    per_row = row + 8 * widest * max(1, len(_widths(preset)))
    if batch * per_row > have:
        raise _too_big("--batch-size", "a batch", batch * per_row, have, batch)
    n_step = int(getattr(preset, "n_step", 1) or 1)
    if max(batch, 1) * n_step * 16 > have:
        raise _too_big(
            "--n-step", "n-step returns of a batch", max(batch, 1) * n_step * 16, have, n_step
        )


def _check_rates(preset: Any, explicit: Mapping[str, Any]) -> None:
    epochs = int(getattr(preset, "max_epochs", 0) or 0)
    per_epoch = int(getattr(preset, "step_per_epoch", 0) or 0)
    budget = epochs * per_epoch
    if budget <= 0:
        return
    where = f"the run's {budget} env steps (--epochs {epochs} × --step-per-epoch {per_epoch})"
    collect = getattr(preset, "step_per_collect", None)
    if "step_per_collect" in explicit and collect is not None and collect > budget:
        raise UsageError(f"--step-per-collect: expected at most {where}, got {collect}")
    ups = getattr(preset, "update_per_step", None)
    if "update_per_step" in explicit and ups is not None:
        per_collect = float(ups) * float(collect or 1)
        if not math.isfinite(per_collect) or per_collect > budget:
            raise UsageError(
                f"--update-per-step: expected at most {where} gradient steps per collect "
                f"(--update-per-step × --step-per-collect {collect or 1}), got {ups} "
                f"({per_collect:.3g} gradient steps per collect)"
            )


def check_sizes(
    preset: Any,
    observation_space: Any,
    action_space: Any,
    explicit: Mapping[str, Any] | None = None,
    device: str = "cpu",
    buffer_device: str = "cpu",
) -> None:
    """Raise a :class:`~tdrl.errors.UsageError` naming the flag when a size of ``preset``
    cannot fit in memory, or a rate the user gave (``explicit``: the overridden preset
    fields) exceeds the run's env-step budget (see the module docstring).

    >>> from gymnasium.spaces import Box, Discrete
    >>> from tdrl.presets import registry
    >>> p = registry.preset("dqn", "CartPole-v1")
    >>> check_sizes(p, Box(-1, 1, (4,)), Discrete(2))
    >>> check_sizes(p.replace(buffer_size=10**17), Box(-1, 1, (4,)), Discrete(2))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tdrl.errors.UsageError: --buffer-size: expected a replay buffer that fits in this ...
    """
    have = machine_memory(device)
    _check_memory(preset, observation_space, action_space, have, machine_memory(buffer_device))
    _check_rates(preset, explicit or {})
