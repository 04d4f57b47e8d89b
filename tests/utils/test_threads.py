"""The one thread setting (:mod:`tdrl.utils.threads`): one torch thread for small models on
the CPU when training starts, unless the user chose; nothing at import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from tdrl.utils.threads import SMALL_MODEL_PARAMS, decide_cpu_threads

SCRIPT = """
import sys, torch
import tdrl
before = torch.get_num_threads()
import gymnasium as gym
from tdrl.algorithm import PPO, ActorPolicy
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OnPolicyTrainer
from tdrl.utils.net import DiscreteActor, VCritic
assert torch.get_num_threads() == before, "an import changed the thread count"
{setup}
envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
policy = ActorPolicy(actor=DiscreteActor(4, 2, (8,)), action_space=envs.action_space[0])
alg = PPO(policy=policy, critic=VCritic(4, (8,)))
train = Collector(policy, envs, VectorReplayBuffer(200, 2))
OnPolicyTrainer(alg, train, max_epochs=1, step_per_epoch=50, step_per_collect=50,
                repeat_per_collect=1, batch_size=25, show_progress=False, {kwargs}).run()
print("threads", before, torch.get_num_threads())
"""


def _threads(setup: str = "", kwargs: str = "", env: dict[str, str] | None = None) -> list[int]:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(setup=setup, kwargs=kwargs)],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("threads"))
    return [int(v) for v in line.split()[1:]]


@pytest.mark.slow  # end to end, seconds: CI's slow session
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a default of 2+ threads")
def test_a_trainer_uses_one_thread_and_says_so_unless_the_user_chose() -> None:
    before, after = _threads()
    assert before > 1 and after == 1
    assert _threads(env={"OMP_NUM_THREADS": "2"}) == [2, 2]
    assert _threads(setup="torch.set_num_threads(3)")[1] == 3
    assert _threads(kwargs="cpu_threads=None")[1] == before
    assert _threads(kwargs="cpu_threads=2")[1] == 2


def test_the_rule() -> None:
    small, meta = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2, device="meta")
    assert decide_cpu_threads([small], "auto", environ={}) in (1, None)  # None: tests chose
    assert decide_cpu_threads([small], "auto", environ={"MKL_NUM_THREADS": "3"}) is None
    assert decide_cpu_threads([meta], "auto", environ={"X": "1"}) is None
    big = torch.nn.Linear(SMALL_MODEL_PARAMS, 1, bias=True, device="meta")
    assert decide_cpu_threads([big], "auto", environ={}) is None
    assert decide_cpu_threads(None, 4) == 4 and decide_cpu_threads([small], None) is None
    for bad in (0, "all", 1.5):
        with pytest.raises(ValueError, match="cpu_threads"):
            decide_cpu_threads([small], bad)  # type: ignore[arg-type]
