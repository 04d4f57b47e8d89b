"""A griffe extension for the API reference: docstrings written for Sphinx read well as
Markdown.

* doctest examples (``>>>`` lines and their output) become fenced ``pycon`` code blocks,
  so that mkdocs renders them as code instead of reading their brackets as Markdown links;
* cross-reference roles (``:class:`~tdrl.data.Batch```, ``:func:`...```, ...) become
  inline code of the name they show (``Batch``), not raw role text;
* a paragraph ending in ``::`` (a reStructuredText literal block follows) ends in ``:``.

``nox -s docs`` fails when the built site still shows a role (:func:`raw_roles`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term):`([^`]+)`")
"""A Sphinx cross-reference role and its target."""


def plain_roles(text: str) -> str:
    """Replace each cross-reference role by inline code of the name it shows, and a
    paragraph's ``::`` (outside code) by ``:``.

    >>> plain_roles("See :class:`~tdrl.data.Batch` and :func:`tdrl.make_algorithm`.")
    'See `Batch` and `tdrl.make_algorithm`.'
    >>> plain_roles(":meth:`Title <tdrl.x.y>` is one::")
    '`Title` is one:'
    """

    def shown(m: re.Match[str]) -> str:
        target = m.group(1)
        if "<" in target and target.endswith(">"):  # :role:`text <target>`
            return f"`{target.split('<', 1)[0].strip()}`"
        if target.startswith("~"):
            return f"`{target[1:].rsplit('.', 1)[-1]}`"
        return f"`{target}`"

    out = ROLE.sub(shown, text)
    return re.sub(r"(?<=\S)::$", ":", out, flags=re.M)


HTML_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|term):(?:<code>|`)"
    r"|[A-Za-z)]::</p>"
)
"""What a role, or a paragraph's literal-block ``::``, looks like once rendered raw."""


def raw_roles(site: str | Path) -> list[str]:
    """``file: text`` for each raw role (or ``::``) left in a built site's HTML pages.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "a.html").write_text(":class:<code>X</code>")
    >>> raw_roles(d)
    ['a.html: :class:<code>']
    """
    found = []
    for page in sorted(Path(site).rglob("*.html")):
        for m in HTML_ROLE.finditer(page.read_text(errors="replace")):
            found.append(f"{page.relative_to(site)}: {m.group(0)}")
    return found


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
            obj.docstring.value = plain_roles(fence_doctests(obj.docstring.value))
