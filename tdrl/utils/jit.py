"""numba, where it is installed and allowed: the one switch for tdrl's compiled loops.

tdrl's hot loops (GAE, n-step returns, the prioritized sum-tree search, the quantile Huber
loss) are plain Python functions over numpy arrays that numba compiles when it is importable
and ``TDRL_NUMBA`` is not ``0``; otherwise their callers take a numpy or torch path with the
same results. :class:`Kernel` compiles on first use and caches the machine code on disk.

>>> def add_one(x):
...     for i in range(x.shape[0]):
...         x[i] += 1.0
>>> kernel = Kernel(add_one, cache=False)  # cache=False: a doctest has no file to cache by
>>> import numpy as np
>>> x = np.zeros(3)
>>> compiled = kernel.get()
>>> (compiled or add_one)(x); x.tolist()
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["Kernel", "numba_enabled"]


def numba_enabled() -> bool:
    """Whether ``TDRL_NUMBA`` allows numba (unset, or anything but ``0``/``false``/``no``/``off``).

    >>> isinstance(numba_enabled(), bool)
    True
    """
    return os.environ.get("TDRL_NUMBA", "1").strip().lower() not in ("0", "false", "no", "off")


class Kernel:
    """``loop`` compiled by numba on the first :meth:`get` (``nogil``, cached on disk), or
    ``None`` from :meth:`get` when numba is missing or disabled.

    :param loop: a function numba's ``njit`` accepts.
    :param signature: an explicit numba signature (compiled eagerly at first use), or ``None``
        to compile per argument types.
    :param fastmath: let LLVM reassociate floating-point sums so that loops vectorize (the
        results then differ from a sequential sum in the last bits).
    :param cache: keep the machine code in numba's on-disk cache beside the module (off for
        a function defined outside a file).
    """

    def __init__(
        self,
        loop: Callable[..., Any],
        *,
        signature: str | None = None,
        fastmath: bool = False,
        cache: bool = True,
    ) -> None:
        self.loop, self.signature, self.fastmath, self.cache = loop, signature, fastmath, cache
        self._compiled: Callable[..., Any] | None = None
        self._loaded = False

    def get(self) -> Callable[..., Any] | None:
        """The compiled loop, or ``None`` without numba (decided once, at the first call)."""
        if not self._loaded:
            self._loaded = True
            if not numba_enabled():
                return None
            try:
                import numba
            except ImportError:
                return None
            jit = numba.njit(
                self.signature, cache=self.cache, nogil=True, fastmath=self.fastmath
            )  # a signature of None: compiled per argument types on first call
            self._compiled = jit(self.loop)
        return self._compiled
