"""``docs/errors.md`` (the table of bad inputs) names only tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cited(text: str) -> list[tuple[str, str]]:
    """``(file, test)`` pairs of the table; ``::name`` alone refers to the last file."""
    out: list[tuple[str, str]] = []
    last = ""
    for ref in re.findall(r"`((?:tests/[\w/]+\.py)?::\w+)`", text):
        path, _, name = ref.partition("::")
        last = path or last
        out.append((last, name))
    return out


def test_every_cited_test_exists() -> None:
    cited = _cited((ROOT / "docs" / "errors.md").read_text())
    assert len(cited) > 40
    missing = []
    for path, name in cited:
        file = ROOT / path
        names = (
            {
                n.name
                for n in ast.walk(ast.parse(file.read_text()))
                if isinstance(n, ast.FunctionDef)
            }
            if file.exists()
            else set()
        )
        if name not in names:
            missing.append(f"{path}::{name}")
    assert missing == []
