"""Where a measurement came from: the commit of the tdrl source that produced it.

Every results record (seed sweeps, conformance runs) carries :func:`source_commit`, so a
table rendered from committed results says what code each number belongs to.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def source_commit() -> str:
    """``git rev-parse HEAD`` of the checkout tdrl is imported from, with ``+dirty`` when
    files under ``tdrl/`` differ from it; ``"unknown"`` outside a git checkout (an
    installed wheel).

    >>> c = source_commit()
    >>> c == "unknown" or len(c.split("+")[0]) == 40
    True
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=_PACKAGE, capture_output=True, text=True,
            check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", str(_PACKAGE)], cwd=_PACKAGE,
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")
