"""pytest plugin for the conformance run: applies ``expected.toml`` to Tianshou's suite.

Every collected test must be listed, and every listed test must be collected. After the run,
each test's outcome is compared with its listing, strictly in both directions:

* ``pass``: the test must pass.
* ``xfail <anchor>: why``: it must fail (an unexpected pass fails the session, so an
  improvement has to be recorded); ``<anchor>`` must be a heading anchor of
  ``docs/differences.md``.
* ``skip``: the test must be skipped by its own skip mark (EnvPool absent).
* ``timing``: a wall-clock assertion; it must pass and is rerun up to 3 times.

``--conformance-dump FILE`` writes the observed outcomes (with the first line of each failure)
as JSON, to help update the list.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
DIFFERENCES = HERE.parent / "docs" / "differences.md"
TIMING_TRIES = 3


def _anchors(markdown: str) -> set[str]:
    """GitHub/mkdocs-style anchors of the headings, plus explicit ``{#id}`` / ``<a id>``."""
    out = set(re.findall(r'<a id="([^"]+)"', markdown)) | set(
        re.findall(r"\{#([\w-]+)\}", markdown)
    )
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = re.sub(r"\{#[\w-]+\}", "", line.lstrip("#")).strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def load_expected(path: Path) -> dict[str, str]:
    """``{"test_file.py::test_id": outcome}`` from the TOML list (one table per file)."""
    data = tomllib.loads(path.read_text())
    return {
        f"{file}::{name}": value for file, tests in data.items() for name, value in tests.items()
    }


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--conformance-expected", default=str(HERE / "expected.toml"))
    parser.addoption("--conformance-dump", default=None)


class Conformance:
    """State of one run: the listing, the observed outcomes and the problems found."""

    def __init__(self, config: pytest.Config) -> None:
        self.expected = load_expected(Path(config.getoption("--conformance-expected")))
        self.dump = config.getoption("--conformance-dump")
        self.actual: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.problems: list[str] = []
        anchors = _anchors(DIFFERENCES.read_text())
        for key, value in self.expected.items():
            kind = value.split(" ", 1)[0]
            if kind not in ("pass", "skip", "timing", "xfail"):
                self.problems.append(f"{key}: unknown outcome {value!r}")
            elif kind == "xfail":
                anchor = value.split(" ", 1)[1].split(":", 1)[0].strip() if " " in value else ""
                if anchor not in anchors:
                    self.problems.append(
                        f"{key}: xfail names no docs/differences.md entry {anchor!r}"
                    )

    @staticmethod
    def key(item: Any) -> str:
        return item.nodeid.split("base/", 1)[-1]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        seen = set()
        for item in items:
            key = self.key(item)
            seen.add(key)
            value = self.expected.get(key)
            if value is None:
                self.problems.append(f"{key}: not listed in expected.toml")
            elif value.startswith("xfail"):
                item.add_marker(pytest.mark.xfail(reason=value, strict=True))
            elif value == "timing":
                _retry(item)
        self.problems += [f"{k}: listed but not collected" for k in self.expected if k not in seen]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = self.key(report)
        if report.when == "call" or report.outcome != "passed":
            if hasattr(report, "wasxfail"):
                outcome = "xfail" if report.skipped else "xpass"
            else:
                outcome = {"passed": "pass", "failed": "fail", "skipped": "skip"}[report.outcome]
            if self.actual.get(key) in (None, "pass"):
                self.actual[key] = outcome
            if report.failed or outcome == "xfail":
                text = (
                    str(report.longrepr.reprcrash.message)
                    if hasattr(report.longrepr, "reprcrash") and report.longrepr.reprcrash
                    else str(report.longrepr)
                )
                self.messages[key] = text.splitlines()[0][:300] if text else ""

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        per_file: dict[str, Counter[str]] = defaultdict(Counter)
        for key, outcome in sorted(self.actual.items()):
            want = self.expected.get(key, "?").split(" ", 1)[0]
            per_file[key.split("::", 1)[0]][outcome] += 1
            ok = outcome == want or (want == "timing" and outcome == "pass")
            if not ok and want != "?":
                self.problems.append(
                    f"{key}: expected {want}, got {outcome}: {self.messages.get(key, '')}"
                )
        if self.dump:
            Path(self.dump).write_text(
                json.dumps({"outcomes": self.actual, "messages": self.messages}, indent=1)
            )
        lines = ["", "conformance (Tianshou 2.0.1 test/base against tdrl):"]
        total: Counter[str] = sum(per_file.values(), Counter())
        for file, counts in [*sorted(per_file.items()), ("total", total)]:
            lines.append(f"  {file:34s} " + _counts(counts))
        for problem in self.problems:
            lines.append(f"  MISMATCH {problem}")
        print("\n".join(lines), file=sys.stderr)
        if self.problems:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _counts(counts: Counter[str]) -> str:
    return "  ".join(f"{k} {counts[k]:3d}" for k in ("pass", "xfail", "skip"))


def _retry(item: pytest.Item) -> None:
    """Rerun a wall-clock test up to ``TIMING_TRIES`` times before its failure counts."""
    run = item.runtest

    def runtest() -> None:
        for attempt in range(TIMING_TRIES):
            try:
                run()
                return
            except AssertionError:
                if attempt == TIMING_TRIES - 1:
                    raise

    item.runtest = runtest  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    import tianshou

    if getattr(tianshou, "__version__", "") != "tdrl-shim":
        raise pytest.UsageError(f"tianshou is not the conformance shim: {tianshou.__file__}")
    config.pluginmanager.register(Conformance(config), "conformance-expected")
