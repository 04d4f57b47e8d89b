"""The package's shape: imports run one way, no circles, files and functions stay readable.

Layers, lowest first (``docs/design.md``): a module may import its own layer and the layers
below it, never one above. ``tdrl.errors`` and ``tdrl.gym_ids`` sit under everything.

Run as a script (``python tests/test_layout.py``) it prints every violation at once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tdrl"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("tdrl.errors", "tdrl.gym_ids"),
    ("tdrl.utils",),
    ("tdrl.env",),
    ("tdrl.data",),
    ("tdrl.algorithm",),
    ("tdrl.trainer",),
    ("tdrl.presets",),
    ("tdrl.experiment",),
    ("tdrl.benchmark",),
    ("tdrl.cli",),
)
"""Each package's layer (its index); every module of the package shares it."""

COMPAT_ALIASES = frozenset(
    {
        "tdrl",  # the package's lazy exports
        "tdrl.launch",
        "tdrl.registry",
        "tdrl.checkpoint",
        "tdrl.algorithm.base",
        "tdrl.algorithm.presets",
        "tdrl.commands",
        "tdrl.commands.bench",
        "tdrl.commands.eval",
        "tdrl.commands.gather",
        "tdrl.commands.report",
    }
)
"""Old import paths kept as re-exports of the new homes. They may import from anywhere,
and no library module may import them."""

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 80
LONG_FUNCTIONS: dict[str, str] = {
    "tdrl.data.batch:Batch.__init__": "Tianshou's Batch constructor: one branch per input "
    "kind it accepts (dicts, Batches, sequences, keyword columns), each a few lines",
}
"""Functions allowed over :data:`MAX_FUNCTION_LINES` (at most five), each with a reason."""


def module_name(path: Path) -> str:
    """``tdrl/data/batch.py`` -> ``tdrl.data.batch``; a package's ``__init__`` -> the package."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package by name."""
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(name: str) -> int | None:
    """The layer index of a module (``None``: a compatibility alias or the package root)."""
    if name in COMPAT_ALIASES:
        return None
    for i, packages in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in packages):
            return i
    raise AssertionError(f"{name}: in no layer of tests/test_layout.py LAYERS")


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, deferred: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Import nodes under ``node`` (not under ``if TYPE_CHECKING:``), with whether each sits
    inside a function (a deferred import)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child):
            for sub in child.orelse:
                yield from _walk(sub, deferred)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, deferred
        inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from _walk(child, inner)


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, int, bool, bool]]:
    """``(module, line, deferred, justified)`` for each tdrl module ``path`` imports.

    ``justified``: a deferred import with a comment on its line or the line above it that
    says why (``# deferred: ...``); such an import may close a circle.
    """
    lines = path.read_text().splitlines()
    out = []
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node, deferred in _walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in known else base)
        lineno = node.lineno
        context = " ".join(lines[max(0, lineno - 2) : lineno])
        justified = deferred and "# deferred:" in context
        for t in targets:
            if t == "tdrl" or t.startswith("tdrl."):
                while t not in known and "." in t:
                    t = t.rpartition(".")[0]
                if (t, lineno, deferred, justified) not in out:
                    out.append((t, lineno, deferred, justified))
    return out


def upward_imports() -> list[str]:
    """Every import from a lower layer into a higher one, or of a compatibility alias."""
    known = modules()
    bad = []
    for name, path in known.items():
        own = layer(name)
        if own is None:
            continue
        for target, line, _, _ in imports(path, known):
            theirs = layer(target)
            if theirs is None and target != "tdrl":
                bad.append(f"{name}:{line} imports the compatibility alias {target}")
            elif theirs is not None and theirs > own:
                bad.append(f"{name}:{line} imports {target}, a layer above it")
    return bad


def import_cycles() -> list[list[str]]:
    """Strongly connected groups of two or more modules (or a module importing itself),
    over every import but justified deferred ones."""
    known = modules()
    graph: dict[str, set[str]] = {n: set() for n in known}
    for name, path in known.items():
        for target, _, _, justified in imports(path, known):
            if not justified and target in graph:
                graph[name].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph[v]:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def long_files() -> list[str]:
    """Library files over :data:`MAX_FILE_LINES` lines."""
    out = []
    for name, path in modules().items():
        n = len(path.read_text().splitlines())
        if n > MAX_FILE_LINES:
            out.append(f"{name}: {n} lines")
    return out


def long_functions() -> dict[str, int]:
    """``{"module:Qual.name": lines}`` of every function over :data:`MAX_FUNCTION_LINES`
    lines (from its ``def`` to its last line, docstring included)."""
    out: dict[str, int] = {}
    for name, path in modules().items():
        tree = ast.parse(path.read_text())

        def visit(node: ast.AST, prefix: str, module: str = name) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    qual = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        n = (child.end_lineno or child.lineno) - child.lineno + 1
                        if n > MAX_FUNCTION_LINES:
                            out[f"{module}:{qual}"] = n
                    visit(child, qual + ".")
                else:
                    visit(child, prefix)

        visit(tree, "")
    return out


def test_no_upward_imports() -> None:
    bad = upward_imports()
    assert not bad, "imports that run back up:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    cycles = import_cycles()
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_file_sizes() -> None:
    assert not long_files(), f"files over {MAX_FILE_LINES} lines: {long_files()}"


def test_function_sizes() -> None:
    assert len(LONG_FUNCTIONS) <= 5
    found = long_functions()
    extra = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS}
    assert not extra, f"functions over {MAX_FUNCTION_LINES} lines: {extra}"
    stale = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not stale, f"LONG_FUNCTIONS lists functions that are short now: {stale}"


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The scanner sees a deferred upward import, skips ``TYPE_CHECKING`` ones, resolves
    relative imports, honours only commented deferred imports, and finds a circle."""
    import pytest

    mp = pytest.MonkeyPatch()
    root = tmp_path / "tdrl"
    (root / "data").mkdir(parents=True)
    (root / "trainer").mkdir()
    for d in (root, root / "data", root / "trainer"):
        (d / "__init__.py").write_text("")
    (root / "data" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tdrl.trainer import x\n"
        "def f():\n    from tdrl.trainer.b import y\n"
        "from . import c\n"
    )
    (root / "data" / "c.py").write_text(
        "def g():\n    # deferred: a test of the escape hatch\n    from tdrl.data import a\n"
    )
    (root / "trainer" / "b.py").write_text("from tdrl.data.a import f\n")
    import sys

    mp.setattr(sys.modules[__name__], "ROOT", root)
    try:
        known = modules()
        assert imports(known["tdrl.data.a"], known) == [
            ("tdrl.trainer.b", 5, True, False),
            ("tdrl.data.c", 6, False, False),
        ]
        assert upward_imports() == ["tdrl.data.a:5 imports tdrl.trainer.b, a layer above it"]
        assert import_cycles() == [["tdrl.data.a", "tdrl.trainer.b"]]
    finally:
        mp.undo()


if __name__ == "__main__":
    for line in upward_imports():
        print("UPWARD", line)
    for group in import_cycles():
        print("CYCLE", " <-> ".join(group))
    for line in long_files():
        print("FILE", line)
    for qual, n in sorted(long_functions().items(), key=lambda kv: -kv[1]):
        print("FUNC", n, qual, "(allowed)" if qual in LONG_FUNCTIONS else "")
