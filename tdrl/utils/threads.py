"""tdrl's one thread setting: one torch intra-op thread for small models on the CPU.

RL networks are small: a CartPole or MuJoCo MLP's matrix products take microseconds, and
torch's default of one intra-op thread per core spends more on waking and joining the
threads than it saves, far more on a busy machine. (The README's PPO example: 15 min as
written on a loaded 2-core machine, 38 s with one thread.) So trainers (and ``tdrl
train``) use one thread when training a small model on the CPU, unless the user chose:

* ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` is set,
* ``torch.get_num_threads()`` differs from what it was when this module was imported
  (the user called ``torch.set_num_threads``), or
* the trainer was given ``cpu_threads=N`` (that many) or ``cpu_threads=None`` (leave
  torch alone).

Nothing happens at ``import tdrl``; the choice is made when training starts and printed
once per process.

>>> small = torch.nn.Linear(4, 2)
>>> decide_cpu_threads([small], "auto", environ={"OMP_NUM_THREADS": "4"}) is None
True
>>> decide_cpu_threads([small], 3, environ={})
3
>>> decide_cpu_threads([small.to("meta")], "auto", environ={}) is None  # not on the CPU
True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import torch

__all__ = ["SMALL_MODEL_PARAMS", "apply_cpu_threads", "decide_cpu_threads", "explicit_threads"]

SMALL_MODEL_PARAMS = 5_000_000
"""Models with at most this many parameters count as small (every MLP preset; the Atari
Nature CNN has about 1.7M)."""


def _threads_at_import() -> int:
    import tdrl

    at_import = getattr(tdrl, "_TORCH_THREADS_AT_IMPORT", None)  # torch loaded before tdrl
    return int(at_import) if at_import is not None else torch.get_num_threads()


_IMPORT_THREADS = _threads_at_import()
_reported = False


def explicit_threads(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the user chose the thread count (an env variable, or a call of
    ``torch.set_num_threads`` since tdrl was imported)."""
    env = os.environ if environ is None else environ
    if "OMP_NUM_THREADS" in env or "MKL_NUM_THREADS" in env:
        return True
    return torch.get_num_threads() != _IMPORT_THREADS


def decide_cpu_threads(
    modules: Iterable[Any] | None,
    setting: int | str | None,
    environ: Mapping[str, str] | None = None,
) -> int | None:
    """The thread count to set for training ``modules`` (``None``: leave torch alone).

    :param modules: the models trained (``None``: assume a small model on the CPU).
    :param setting: ``"auto"`` (one thread for a small model on the CPU unless the user
        chose), an int (that many), or ``None`` (leave torch alone).
    """
    if setting is None:
        return None
    if isinstance(setting, int) and not isinstance(setting, bool):
        if setting < 1:
            raise ValueError(f"cpu_threads: expected an int >= 1, 'auto' or None, got {setting}")
        return setting
    if setting != "auto":
        raise ValueError(f"cpu_threads: expected an int >= 1, 'auto' or None, got {setting!r}")
    if explicit_threads(environ):
        return None
    if modules is not None:
        params = [p for m in modules for p in m.parameters()]
        if any(p.device.type != "cpu" for p in params):
            return None
        if sum(p.numel() for p in params) > SMALL_MODEL_PARAMS:
            return None
    return 1


def apply_cpu_threads(
    modules: Iterable[Any] | None, setting: int | str | None = "auto", report: bool = True
) -> int | None:
    """Set the thread count :func:`decide_cpu_threads` picks; print the choice once per
    process (when ``report`` and it changes anything). Returns the count set, or ``None``."""
    global _reported
    n = decide_cpu_threads(modules, setting)
    if n is None or n == torch.get_num_threads():
        return n
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    if report and not _reported:
        _reported = True
        print(
            f"tdrl: training with {n} torch thread(s) instead of {before} (a small model on "
            "the CPU; cpu_threads=None, OMP_NUM_THREADS or torch.set_num_threads keeps "
            "your choice)",
            flush=True,
        )
    return n
