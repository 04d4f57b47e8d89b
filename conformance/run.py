"""Run Tianshou 2.0.1's own tests against tdrl through the import-name shim.

``python conformance/run.py [--suite DIR] [--scripts] [pytest args...]``

Without ``--scripts``: ``test/base`` (the data layer), judged by ``expected.toml``. With
``--scripts``: the algorithm scripts of ``test/{discrete,continuous,offline,modelbased,
pettingzoo}`` at a small budget, one at a time, judged by ``expected_scripts.toml``
(``conformance/scripts_plugin.py``: whether each one trained, and whether it reached its own
threshold; ``--default-budget`` runs them at their own defaults instead).

1. Checks every file of the suite's ``test/base`` (and ``test/__init__.py``) against
   ``SHA256SUMS``: no edits, nothing added or missing.
2. Copies them to a temporary directory and runs pytest there, with ``conformance/shim`` (the
   ``tianshou`` name mapping) first on ``PYTHONPATH`` and ``conformance/plugin.py`` applying
   ``conformance/expected.toml``. Nothing is deselected.

The suite defaults to ``../shared/tianshou-tests`` beside the repository (``TIANSHOU_TESTS``
overrides it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SUITE = ROOT.parent / "shared" / "tianshou-tests"


BASE = ("test/base/",)
SCRIPTS = tuple(
    f"test/{d}/" for d in ("discrete", "continuous", "offline", "modelbased", "pettingzoo")
)
TOP = ("test/__init__.py", "test/determinism_test.py")


def verify(suite: Path, folders: tuple[str, ...] = BASE) -> list[str]:
    """The suite's files under ``folders`` (and its top-level modules), each checked
    against ``SHA256SUMS``: no edits, nothing added or missing (raises if not)."""
    sums = {}
    for line in (suite / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.lstrip("*")] = digest
    tops = TOP if folders != BASE else TOP[:1]
    wanted = sorted(n for n in sums if n.startswith(folders) or n in tops)
    present = {
        str(p.relative_to(suite))
        for folder in folders
        for p in (suite / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    present |= {n for n in tops if (suite / n).is_file()}
    extra = sorted(set(present) - set(wanted))
    missing = sorted(set(wanted) - set(present))
    bad = [
        n
        for n in wanted
        if n in present and hashlib.sha256((suite / n).read_bytes()).hexdigest() != sums[n]
    ]
    if extra or missing or bad:
        raise SystemExit(
            f"suite does not match SHA256SUMS: extra={extra} missing={missing} changed={bad}"
        )
    return wanted


EXPERTS = ("gather_cartpole_data", "gather_pendulum_data")
"""``test/offline``'s expert-data scripts: each trains an online agent to its threshold and
pickles its replay buffer beside itself, where the offline scripts load it."""


def gather_experts(tmp: str, env: dict[str, str]) -> None:
    """Run the expert-data scripts at their own default arguments (as Tianshou's CI does,
    which runs every script at its defaults), so the small-budget offline scripts train on
    real expert data: at the small budget the expert would miss its own threshold assert
    and the offline script would never reach its algorithm."""
    for name in EXPERTS:
        start = time.perf_counter()
        code = (
            "import sys; sys.argv = ['gather']; "
            f"from test.offline.{name} import gather_data; gather_data()"
        )
        proc = subprocess.run(  # its progress bars stay out of the log unless it fails
            [sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True
        )
        took = time.perf_counter() - start
        print(f"conformance: {name} at its defaults: exit {proc.returncode} in {took:.0f} s")
        if proc.returncode:
            print(proc.stderr[-4000:], file=sys.stderr)
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    """Verify, copy and run the suite; the exit status is pytest's."""
    suite = Path(os.environ.get("TIANSHOU_TESTS", DEFAULT_SUITE))
    if argv[:1] == ["--suite"]:
        suite, argv = Path(argv[1]), argv[2:]
    scripts = "--scripts" in argv
    argv = [a for a in argv if a != "--scripts"]
    if not (suite / "SHA256SUMS").is_file():
        raise SystemExit(f"{suite}: Tianshou's test suite not found (set TIANSHOU_TESTS)")
    files = verify(suite.resolve(), SCRIPTS if scripts else BASE)
    print(f"conformance: {len(files)} files of {suite} match SHA256SUMS", flush=True)
    with tempfile.TemporaryDirectory(prefix="tdrl-conformance-") as tmp:
        for name in files:
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(suite / name, Path(tmp) / name)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE / "shim"), str(HERE), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        env.setdefault("RL_WARNINGS", "0")
        if scripts:
            gather_experts(tmp, env)
            targets = [str(Path(tmp) / f) for f in SCRIPTS]
            cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"),
                   f"--rootdir={tmp}", "-p", "scripts_plugin", "-q", "-rfE",
                   "--timeout=900", "-W", "ignore", *targets, *argv]  # fmt: skip
        else:
            cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"),
                   f"--rootdir={tmp}", "-p", "plugin", "-q", "-rfE",
                   str(Path(tmp) / "test" / "base"), *argv]  # fmt: skip
        return subprocess.call(cmd, cwd=tmp, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
