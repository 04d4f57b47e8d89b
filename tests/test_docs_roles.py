"""The API reference shows no raw Sphinx roles: ``docs/griffe_doctests.py`` turns them into
inline code, and ``nox -s docs`` fails on any left in the built site."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture
def ext(monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_doctests", DOCS / "griffe_doctests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "griffe_doctests", module)
    spec.loader.exec_module(module)
    return module


def test_roles_become_inline_code_and_literal_markers_a_colon(ext: Any) -> None:
    text = "Uses :class:`~tdrl.data.Batch`, :meth:`Algorithm.update` and\n:mod:`tdrl.env`::"
    assert ext.plain_roles(text) == "Uses `Batch`, `Algorithm.update` and\n`tdrl.env`:"
    assert ext.plain_roles(":func:`the maker <tdrl.make_algorithm>`") == "`the maker`"


def test_the_site_check_finds_raw_roles(ext: Any, tmp_path: Path) -> None:
    (tmp_path / "ok.html").write_text("<p>Uses <code>Batch</code>.</p>")
    assert ext.raw_roles(tmp_path) == []
    (tmp_path / "bad.html").write_text("<p>Uses :class:<code>~tdrl.Batch</code> as::</p>")
    assert len(ext.raw_roles(tmp_path)) == 2
