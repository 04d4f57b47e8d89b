"""Run Tianshou 2.0.1's ``test/base`` against tdrl through the import-name shim.

``python conformance/run.py [--suite DIR] [pytest args...]``

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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_SUITE = ROOT.parent / "shared" / "tianshou-tests"


def verify(suite: Path) -> list[str]:
    """The suite's ``test/base`` files, each checked against ``SHA256SUMS`` (raises if not)."""
    sums = {}
    for line in (suite / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.lstrip("*")] = digest
    wanted = sorted(n for n in sums if n.startswith("test/base/") or n == "test/__init__.py")
    base = (suite / "test" / "base").rglob("*")
    present = {str(p.relative_to(suite)) for p in base if p.is_file()}
    present = {n for n in present if "__pycache__" not in n}
    if (suite / "test" / "__init__.py").is_file():
        present.add("test/__init__.py")
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


def main(argv: list[str]) -> int:
    """Verify, copy and run the suite; the exit status is pytest's."""
    suite = Path(os.environ.get("TIANSHOU_TESTS", DEFAULT_SUITE))
    if argv[:1] == ["--suite"]:
        suite, argv = Path(argv[1]), argv[2:]
    if not (suite / "SHA256SUMS").is_file():
        raise SystemExit(f"{suite}: Tianshou's test suite not found (set TIANSHOU_TESTS)")
    files = verify(suite.resolve())
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
        cmd = [sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"),
               f"--rootdir={tmp}", "-p", "plugin", "-q", "-rfE",
               str(Path(tmp) / "test" / "base"), *argv]  # fmt: skip
        return subprocess.call(cmd, cwd=tmp, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
