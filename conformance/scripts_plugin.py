"""pytest plugin for Tianshou 2.0.1's algorithm scripts run against tdrl (``run.py --scripts``).

Before the scripts are imported (they parse ``sys.argv`` at import time, in their
``get_args()`` defaults), ``sys.argv`` is set to the small budget :data:`BUDGET`
(``--default-budget``: the scripts' own defaults). Each test's outcome is then judged by
what tdrl did, not only by pytest's verdict:

* ``reached``: it trained (tdrl's gradient-step counter, ``GradStep.taken``, rose; for
  PSRL, which has no gradients, its posterior-update counter) and
  passed, its own threshold assert included;
* ``trained``: it trained, and then only the script's own final ``assert`` failed (the
  threshold, which a small budget need not reach; pytest reports it as ``xfailed``);
* ``untrained``: it returned, or failed, without one gradient step;
* ``error``: it raised before or while training; ``skip``: it skipped itself.

``expected_scripts.toml`` lists every test: ``trains`` (``reached`` or ``trained``),
``skip``, or ``xfail <anchor>: why`` (anything but training; the anchor is a heading of
``docs/differences.md``). The comparison is strict both ways, so an improvement has to be
recorded. ``--conformance-dump FILE`` writes each test's outcome, gradient steps, wall
time and first error line as JSON, after every test; with ``--resume`` the tests already in
that file are not run again (a long ``--default-budget`` run continues where it stopped).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin import _anchors, load_expected  # conformance/plugin.py (on sys.path)

HERE = Path(__file__).resolve().parent
DIFFERENCES = HERE.parent / "docs" / "differences.md"
BUDGET = [
    "--epoch", "1", "--epoch_num_steps", "200",
    "--num_training_envs", "2", "--num_test_envs", "2",
]  # fmt: skip
"""The small budget every script runs at (flags a script does not define are ignored)."""
FOLDERS = ("discrete", "continuous", "offline", "modelbased", "pettingzoo")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--conformance-expected", default=str(HERE / "expected_scripts.toml"))
    parser.addoption("--conformance-dump", default=None)
    parser.addoption("--default-budget", action="store_true", default=False)
    parser.addoption("--resume", action="store_true", default=False)


def _in_script(excinfo: Any, path: str) -> bool:
    """Whether the exception was raised by a statement of the script's own test function."""
    tb = excinfo.traceback
    return bool(tb) and str(tb[-1].path) == path


def _commit() -> str:
    """The tdrl commit being measured (``+dirty`` when ``tdrl/`` has uncommitted changes)."""
    from tdrl.benchmark.provenance import source_commit

    return source_commit()


class Scripts:
    """State of one run: the listing, what each test did, the problems found."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.expected = load_expected(Path(config.getoption("--conformance-expected")))
        self.dump = config.getoption("--conformance-dump")
        self.results: dict[str, dict[str, Any]] = {}
        if config.getoption("--resume") and self.dump and Path(self.dump).is_file():
            self.results = json.loads(Path(self.dump).read_text())
        self.problems: list[str] = []
        anchors = _anchors(DIFFERENCES.read_text())
        for key, value in self.expected.items():
            kind = value.split(" ", 1)[0]
            if kind not in ("trains", "skip", "xfail"):
                self.problems.append(f"{key}: unknown outcome {value!r}")
            elif kind == "xfail":
                anchor = value.split(" ", 1)[1].split(":", 1)[0].strip() if " " in value else ""
                if anchor not in anchors:
                    self.problems.append(f"{key}: xfail names no docs/differences.md entry")

    @staticmethod
    def key(nodeid: str) -> str:
        return nodeid.split("test/", 1)[-1]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        done = [i for i in items if self.key(i.nodeid) in self.results]
        if done:  # --resume: what the dump already holds is not run again
            config.hook.pytest_deselected(items=done)
            items[:] = [i for i in items if i not in done]
        seen = {self.key(i.nodeid) for i in done}
        for item in items:
            key = self.key(item.nodeid)
            if key.endswith("_determinism"):
                continue  # Tianshou's own switched-off snapshot tests: they skip themselves
            seen.add(key)
            if key not in self.expected:
                self.problems.append(f"{key}: not listed in expected_scripts.toml")
        if not self.config.getoption("keyword") and not self.config.getoption("markexpr"):
            missing = [k for k in self.expected if k not in seen]
            self.problems += [f"{k}: listed but not collected" for k in missing]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        def learning_steps() -> int:  # gradient steps, and PSRL's gradient-free updates
            from tdrl.algorithm.modelbased.psrl import PSRL
            from tdrl.algorithm.optim import GradStep

            return GradStep.taken + PSRL.posterior_updates

        before, start = learning_steps(), time.perf_counter()
        outcome = yield
        steps, wall = learning_steps() - before, time.perf_counter() - start
        excinfo = outcome.excinfo
        result: dict[str, Any] = {
            "gradient_steps": steps,
            "seconds": round(wall, 1),
            "budget": "default" if self.config.getoption("--default-budget") else "small",
            "commit": _commit(),
            "load_1min": round(os.getloadavg()[0], 2),
        }
        if excinfo is None:
            result["outcome"] = "reached" if steps else "untrained"
        elif excinfo[0] is pytest.skip.Exception:
            result["outcome"] = "skip"
        else:
            info = pytest.ExceptionInfo.from_exc_info(excinfo)  # type: ignore[arg-type]
            own_assert = isinstance(excinfo[1], AssertionError) and _in_script(info, str(item.path))
            if steps and own_assert:
                result["outcome"] = "trained"
            else:
                result["outcome"] = "untrained" if steps == 0 and own_assert else "error"
            message = str(excinfo[1]).splitlines()[0][:300] if str(excinfo[1]) else ""
            result["error"] = f"{excinfo[0].__name__}: {message}"
        self.results[self.key(item.nodeid)] = result
        self._write()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        res = self.results.get(self.key(item.nodeid), {})
        small = not self.config.getoption("--default-budget")
        if call.when == "call" and report.failed and small and res.get("outcome") == "trained":
            # it trained; only its threshold assert missed, which the small budget need not
            # reach: reported as an expected failure, not as a failed test
            report.outcome = "skipped"
            report.wasxfail = (  # type: ignore[attr-defined]
                f"trained {res['gradient_steps']} gradient steps; own threshold not reached "
                "at the small budget"
            )

    def _write(self) -> None:
        if self.dump:
            Path(self.dump).parent.mkdir(parents=True, exist_ok=True)
            Path(self.dump).write_text(json.dumps(self.results, indent=1, sort_keys=True) + "\n")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = self.key(report.nodeid)
        if report.when == "setup" and report.skipped and key not in self.results:
            self.results[key] = {"outcome": "skip", "gradient_steps": 0, "seconds": 0.0}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        counts: Counter[str] = Counter()
        lines = ["", "conformance (Tianshou 2.0.1 algorithm scripts against tdrl):"]
        for key in sorted(self.expected):
            res = self.results.get(key)
            if res is None:
                continue
            got = res["outcome"]
            counts[got] += 1
            want = self.expected[key].split(" ", 1)[0]
            ok = (
                (want == "trains" and got in ("reached", "trained"))
                or (want == "skip" and got == "skip")
                or (want == "xfail" and got not in ("reached", "trained", "skip"))
            )
            if not ok:
                self.problems.append(f"{key}: expected {want}, got {got}: {res.get('error', '')}")
            lines.append(
                f"  {key:58s} {got:9s} {res['gradient_steps']:6d} steps {res['seconds']:7.1f} s"
                + (f"  {res['error'][:90]}" if got in ("error", "untrained") else "")
            )
        trained = counts["reached"] + counts["trained"]
        lines.append(
            f"  total: {trained} trained ({counts['reached']} reached their threshold), "
            f"{counts['untrained']} untrained, {counts['error']} error, {counts['skip']} skip"
        )
        lines += [f"  MISMATCH {p}" for p in self.problems]
        print("\n".join(lines), file=sys.stderr)
        self._write()
        if self.problems:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif session.exitstatus in (
            pytest.ExitCode.TESTS_FAILED,  # a threshold assert at the small budget: judged above
            pytest.ExitCode.NO_TESTS_COLLECTED,  # --resume: everything was done before
        ):
            session.exitstatus = pytest.ExitCode.OK


def pytest_configure(config: pytest.Config) -> None:
    import tianshou

    if getattr(tianshou, "__version__", "") != "tdrl-shim":
        raise pytest.UsageError(f"tianshou is not the conformance shim: {tianshou.__file__}")
    sys.argv = [sys.argv[0]] + ([] if config.getoption("--default-budget") else BUDGET)
    config.pluginmanager.register(Scripts(config), "conformance-scripts")
