"""User errors that need no torch are reported before torch loads (torch and torchrl take
5+ s to import on a loaded machine): a typo in the task id, an algorithm that cannot act in
the task's action space, a missing ``--dataset``. Checked by what the process imported,
not by a clock."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
from tdrl.cli import main
rc = main({argv!r})
print("rc", rc, "torch loaded:", "torch" in sys.modules)
"""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "sac", "CartPole-v1"],
            "sac needs a Box action space; CartPole-v1 has Discrete(2)",
        ),
        (["train", "ppo", "CartPol-v1"], "Environment `CartPol` doesn't exist"),
        (["train", "cql", "Pendulum-v1"], "cql learns from a dataset: expected --dataset"),
        (["train", "dqn", "Pendulum-v1"], "dqn needs a Discrete action space"),
    ],
)
def test_the_error_comes_before_torch(argv: list[str], message: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE.format(argv=argv)], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "rc 2 torch loaded: False", out.stderr
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
