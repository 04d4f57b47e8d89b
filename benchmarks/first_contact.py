"""The README's first-contact costs, measured: the test command and the first training run.

Two measurements, each appended as JSON records (commit, UTC date, 1-minute load, machine)
to ``benchmarks/results/first-contact/results.jsonl``, from which ``python
scripts/render_tables.py`` renders the README's cost paragraph:

* ``log NOX_LOG --clone DIR``: a fresh clone's ``nox`` run (``.ci/run`` or ``nox -s tests
  lint typecheck``), read from its log: each session's wall time as nox reports it, the
  fast suite's pytest summary (tests, seconds) and, with ``--clone``, the disk size of each
  session's environment (``DIR/.nox/NAME``) and the clone's commit;
* ``train [--runs N]``: the README's first command, ``tdrl train ppo CartPole-v1
  --stop-reward 500``, timed end to end (process start included) ``N`` times, each in a
  fresh directory.

    python benchmarks/first_contact.py log /tmp/ci_run.log --clone /tmp/ci_clone
    python benchmarks/first_contact.py train --runs 3
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as ``python benchmarks/first_contact.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import RESULTS, command_line, record, recording

OUT = RESULTS / "first-contact" / "results.jsonl"
SESSION = re.compile(
    r"nox > Session (\S+) was successful in (?:(\d+) minutes?)?\s*(?:(\d+) seconds?)?"
)
PYTEST = re.compile(r"^(\d+) passed(?:, (\d+) skipped)?.* in ([\d.]+)s")
WORKERS = re.compile(r"^nox > pytest .*?(?:-n|--numprocesses)[ =](\d+)", re.MULTILINE)
TOTAL = re.compile(r"nox > Ran \d+ sessions? in (?:(\d+) minutes?)?\s*(?:(\d+) seconds?)?")
TRAIN = ["-m", "tdrl.cli", "train", "ppo", "CartPole-v1", "--stop-reward", "500", "--no-progress"]


def parse_nox_log(text: str) -> dict[str, Any]:
    """Session wall times (seconds, at nox's resolution), the whole run's, the first pytest
    summary and its worker count (``-n``; 1 when pytest ran in one process).

    >>> log = ("nox > Running session tests\\nnox > pytest -q -n 2\\n"
    ...        "10 passed, 2 skipped in 61.5s\\n"
    ...        "nox > Session tests was successful in 2 minutes.\\n"
    ...        "nox > Session lint was successful in 7 seconds.\\n"
    ...        "nox > Ran 2 sessions in 2 minutes:\\n")
    >>> parsed = parse_nox_log(log)
    >>> parsed["sessions"], parsed["tests_passed"], parsed["tests_skipped"], parsed["pytest_s"]
    ({'tests': 120, 'lint': 7}, 10, 2, 61.5)
    >>> parsed["pytest_workers"], parsed["total_s"]
    (2, 120)
    """
    sessions: dict[str, int] = {}
    for m in SESSION.finditer(text):
        sessions[m.group(1)] = int(m.group(2) or 0) * 60 + int(m.group(3) or 0)
    out: dict[str, Any] = {"sessions": sessions}
    workers = WORKERS.search(text)
    out["pytest_workers"] = int(workers.group(1)) if workers else 1
    total = TOTAL.search(text)
    if total:
        out["total_s"] = int(total.group(1) or 0) * 60 + int(total.group(2) or 0)
    for line in text.splitlines():
        m = PYTEST.match(line.strip())
        if m:
            out.update(tests_passed=int(m.group(1)), tests_skipped=int(m.group(2) or 0),
                       pytest_s=float(m.group(3)))  # fmt: skip
            break
    return out


def _du_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20
    )


def from_log(log: Path, clone: Path | None) -> dict[str, Any]:
    """One ``nox_run`` record's values from a log (and the clone's environments)."""
    values = parse_nox_log(log.read_text(errors="replace"))
    if clone is not None:
        nox_dir = clone / ".nox"
        values["env_mb"] = {
            d.name: round(_du_mb(d)) for d in sorted(nox_dir.iterdir()) if d.is_dir()
        }
        values["clone_commit"] = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    return values


def time_train(runs: int) -> list[float]:
    """Wall seconds of ``tdrl train ppo CartPole-v1 --stop-reward 500``, each in a fresh
    directory (a failed run raises)."""
    seconds = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([sys.executable, *TRAIN], cwd=tmp, check=True, capture_output=True)
            seconds.append(time.perf_counter() - start)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p_log = sub.add_parser("log", help="record a fresh clone's nox run from its log")
    p_log.add_argument("log", type=Path)
    p_log.add_argument("--clone", type=Path, default=None)
    p_train = sub.add_parser("train", help="time the README's first training command")
    p_train.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.what == "log" and not args.log.is_file():
        print(f"first_contact: {args.log}: expected a nox log file, not found", file=sys.stderr)
        return 2
    invocation = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with recording(args.out, command=command_line(), invocation=invocation, module=args.what):
        if args.what == "log":
            values = from_log(args.log, args.clone)
            record("nox_run", **values)
            print(values)
        else:
            seconds = time_train(args.runs)
            record(
                "readme_train",
                seconds=seconds,
                command="tdrl train ppo CartPole-v1 --stop-reward 500",
            )
            print(
                f"tdrl train ppo CartPole-v1 --stop-reward 500: {[round(s, 1) for s in seconds]} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
