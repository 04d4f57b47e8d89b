"""A griffe extension for the API reference: doctest examples (``>>>`` lines and their
output) in docstrings become fenced ``pycon`` code blocks, so that mkdocs renders them as
code instead of reading their brackets as Markdown links."""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Wrap every run of doctest lines (a ``>>>`` line up to the next blank line) in a
    fenced ``pycon`` block, keeping its indentation.

    >>> print(fence_doctests("Sum.\\n\\n>>> 1 + 1\\n2\\n\\nDone."))
    Sum.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    Done.
    """
    out: list[str] = []
    inside = False
    indent = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not inside and stripped.startswith(">>>"):
            inside = True
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctests of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring in place."""
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
