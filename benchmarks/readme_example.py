"""The README's 20-line Python example against ``tdrl train ppo CartPole-v1`` to the same
threshold: a user's own script must get the CLI's speed (goal: at most 1.5x its wall
time). Each round runs both as fresh processes, alternating, with no thread variables set;
the table gives the medians. The long-run lane is paused meanwhile.

    python benchmarks/readme_example.py [--rounds 3] [--out PATH]

The round times and medians are recorded (one ``readme_example`` record, with the commit,
date and load) in ``benchmarks/results/first-contact/results.jsonl`` (``--out``; ``-``:
none), from which the README's first-contact paragraph is rendered.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.timing import RESULTS, lane_paused, record, recording

ROOT = Path(__file__).resolve().parents[1]


def readme_example() -> str:
    """The Python code block under the README's "A 20-line example" heading."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## A 20-line example", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        raise SystemExit("README.md: expected a ```python block under '## A 20-line example'")
    return match.group(1)


def _wall(cmd: list[str], cwd: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    start = time.perf_counter()
    subprocess.run(
        cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Time both, alternating, and print the medians and their ratio."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=str(RESULTS / "first-contact" / "results.jsonl"))
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="readme-example-")
    script = Path(work) / "example.py"
    script.write_text(readme_example())
    cli = [sys.executable, "-m", "tdrl.cli", "train", "ppo", "CartPole-v1"]
    cli += ["--stop-reward", "195", "--no-progress", "--logdir", work, "--overwrite"]
    walls: dict[str, list[float]] = {"example": [], "cli": []}
    with lane_paused():
        for r in range(args.rounds):
            walls["example"].append(_wall([sys.executable, str(script)], work))
            walls["cli"].append(_wall(cli, work))
            print(f"round {r}: example {walls['example'][-1]:.1f} s, "
                  f"tdrl train {walls['cli'][-1]:.1f} s", flush=True)  # fmt: skip
    a, b = statistics.median(walls["example"]), statistics.median(walls["cli"])
    met = "met" if a <= 1.5 * b else "NOT met"
    print("| README example (s) | tdrl train ppo CartPole-v1 --stop-reward 195 (s) | ratio | "
          "goal <= 1.5 |")  # fmt: skip
    print("|---|---|---|---|")
    print(f"| {a:.1f} | {b:.1f} | {a / b:.2f}x | {met} |")
    out = None if args.out == "-" else Path(args.out)
    with recording(out, command="python benchmarks/readme_example.py", module="readme_example"):
        record("readme_example", rounds=args.rounds, example_s=walls["example"],
               cli_s=walls["cli"], example_median=a, cli_median=b, ratio=a / b)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
