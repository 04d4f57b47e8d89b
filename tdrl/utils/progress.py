"""Progress bars (tqdm) that can be switched off without changing the calling code."""

from __future__ import annotations

from typing import Any

from tqdm.auto import tqdm


def progress_bar(total: int, desc: str, disable: bool = False, **kwargs: Any) -> tqdm:
    """A tqdm bar over ``total`` units; a no-op bar when ``disable``.

    >>> with progress_bar(total=3, desc="x", disable=True) as bar:
    ...     _ = bar.update(3)
    """
    return tqdm(total=total, desc=desc, disable=disable, dynamic_ncols=True, ascii=True, **kwargs)
