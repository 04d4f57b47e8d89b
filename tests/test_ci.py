"""CI wiring: nox sessions, markers, ``.ci/run`` and the oracle enforcement."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _sessions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    return {
        f.name: f
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any("session" in ast.unparse(d) for d in f.decorator_list)
    }


def test_every_session_installs_torch_first() -> None:
    """Every session that installs torch installs the CPU build 2.13.0 first; ``lint``
    installs ruff alone, and ``typecheck`` runs in the ``tests`` session's environment."""
    sessions = _sessions()
    assert {"tests", "lint", "typecheck", "oracle", "slow", "slower"} <= set(sessions)
    lint = ast.unparse(sessions.pop("lint"))
    assert "session.install('ruff>=0.6')" in lint and "TORCH" not in lint
    typecheck = ast.unparse(sessions.pop("typecheck"))
    assert "'tests', '--install-only'" in typecheck and "install(" not in typecheck
    for name, fn in sessions.items():
        first = next(
            n for n in ast.walk(fn) if isinstance(n, ast.Call) and "install" in ast.unparse(n.func)
        )
        assert ast.unparse(first) in ("_install(session)", "session.install(TORCH)") or (
            ast.unparse(first).startswith("_install(session,")
        ), name
    text = (ROOT / "noxfile.py").read_text()
    assert 'TORCH = "torch==2.13.0"' in text and 'TIANSHOU = "tianshou==2.0.1"' in text


def test_markers_and_default_deselection() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    addopts = re.search(r"^addopts = (.*)$", text, re.M).group(1)  # type: ignore[union-attr]
    assert "-m 'not slow and not slower'" in addopts
    assert re.search(r'^    "slow: ', text, re.M) and re.search(r'^    "slower: ', text, re.M)
    assert re.search(r'^    "pytest-xdist>=3",$', text, re.M)
    slow = ast.unparse(_sessions()["slow"])
    assert "'-n', '2'" in slow and "'-m', 'slow'" in slow
    assert "'-m', 'slower'" in ast.unparse(_sessions()["slower"])


def test_ci_script_runs_the_sessions_in_order() -> None:
    lines = [
        ln.strip()
        for ln in (ROOT / ".ci" / "run").read_text().splitlines()
        if ln.strip().startswith("nox -s")
    ]
    assert lines == [
        "nox -s tests lint typecheck",
        "nox -s oracle",
        "nox -s conformance",
        "nox -s docs",
        "nox -s slow",
    ]


def test_oracle_report_check(tmp_path: Path) -> None:
    pytest.importorskip("nox")
    import importlib.util

    spec = importlib.util.spec_from_file_location("tdrl_noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.data.test_batch_tianshou" name="test_a"/>'
        '<testcase classname="tests.algorithm.test_dqn" name="test_b">'
        "<skipped message=\"could not import 'tianshou': No module named 'tianshou'\"/>"
        "</testcase>"
        '<testcase classname="tests.data.test_batch" name="test_c"/>'
        "</testsuite></testsuites>"
    )
    ran, skipped = noxfile._check_oracle_ran(report)
    assert ran == 1
    assert skipped == ["tests.algorithm.test_dqn::test_b"]
