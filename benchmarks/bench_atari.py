"""Atari throughput: env steps per second of DQN training on Pong, tdrl vs Tianshou 2.0.1.

Both sides train DQN on ``PongNoFrameskip-v4`` (the real ALE, ale-py) with the hyperparameters
of Tianshou's ``examples/atari/atari_dqn.py`` (tdrl's ``atari`` preset,
:mod:`tdrl.presets.atari`): the DeepMind wrappers (each library's own ``wrap_deepmind``,
training mode: episodic life, reward clipping, 4 stacked frames), the Nature CNN with the
same initial weights, Adam 1e-4, gamma 0.99, 3-step returns, a target sync every 500
gradient steps, a 100k replay buffer that stores one frame per step (``stack_num=4,
save_only_last_obs=True, ignore_obs_next=True``), 10 training envs in this process
(``DummyVectorEnv``), 10 env steps per collect and one gradient step of 32 samples per
collect (``update_per_step`` 0.1), epsilon annealed from 1.0 as in the example, a warm-up
of 320 random steps. Each side runs its own off-policy trainer for :data:`STEPS` training
env steps, without test episodes (``test_collector=None``), with ``torch.set_num_threads(1)``.

Printed per side: training env steps per second (the trainer's ``run()`` as a whole) and the
split into collects (envs, wrappers, policy, buffer writes), updates (sampling, n-step
returns, gradient step) and the rest of the trainer. Tianshou 2.0.1's trainer scans the whole
replay buffer for NaNs after every collect (``buffer.hasnull()``, not optional; its cost
grows with the buffer): it is in Tianshou's "rest". The ratio line gives the speed-up of tdrl
in env steps per second, overall and for collects + updates alone, and the same for the
wrappers alone (one env, random actions, no learning). Both lines are recorded
(``benchmarks/results/atari/results.jsonl``; ``scripts/render_tables.py`` renders the
README's table from the newest run).

Tianshou 2.0.1's ``atari_wrapper`` asks numpy for ``np.dtype(np.integer)``, which numpy >=
2.3 refuses; its ``get_space_dtype`` is replaced by the space's own dtype here (nothing
else changes).

    python -m benchmarks atari
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from benchmarks.timing import record

TASK = "PongNoFrameskip-v4"
STEPS = 2000
"""Timed training env steps per side (after the warm-up)."""
WRAPPER_STEPS = 1000
"""Env steps of the wrapper-only comparison (one env, random actions)."""
SEED = 0


def _timed(obj: object, name: str, acc: dict[str, float], key: str) -> None:
    """Wrap the bound method ``obj.name`` so that its wall time adds up in ``acc[key]``."""
    inner = getattr(obj, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            acc[key] += time.perf_counter() - start

    setattr(obj, name, wrapper)


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _tianshou_wrap() -> Callable[..., gym.Env]:
    from tianshou.env.atari import atari_wrapper

    # numpy >= 2.3 (module docstring)
    atari_wrapper.get_space_dtype = lambda space: space.dtype  # type: ignore[assignment,return-value]
    return atari_wrapper.wrap_deepmind  # type: ignore[no-any-return]


def _eps_schedule(p: Any) -> Callable[[int], float]:
    from tdrl.algorithm.exploration import LinearSchedule

    return LinearSchedule(p.eps_train, p.eps_train_final, p.eps_decay_steps)


def _initial_weights() -> list[torch.Tensor]:
    """The Tianshou ``DQNet``'s initial weights (both sides start from them)."""
    from tianshou.env.atari.atari_network import DQNet

    torch.manual_seed(SEED)
    return [v.clone() for v in DQNet(c=4, h=84, w=84, action_shape=6).state_dict().values()]


def run_tdrl(steps: int, weights: list[torch.Tensor]) -> dict[str, float]:
    """Train tdrl's Atari DQN preset for ``steps`` env steps; the phase times."""
    import tdrl.env.atari as atari
    from tdrl import presets
    from tdrl.data.buffer import VectorReplayBuffer
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv
    from tdrl.presets.atari import build_dqn
    from tdrl.trainer import OffPolicyTrainer

    p: Any = presets.preset("dqn", TASK)
    _seed(SEED)
    envs = DummyVectorEnv([lambda: atari.wrap_deepmind(gym.make(TASK))] * p.training_num)
    alg = build_dqn(p, envs.observation_space[0], envs.action_space[0])
    model = alg.policy.model
    model.load_state_dict(dict(zip(model.state_dict(), weights)))
    alg.sync_target()
    buffer = VectorReplayBuffer(
        p.buffer_size,
        p.training_num,
        stack_num=p.frames_stack,
        save_only_last_obs=True,
        ignore_obs_next=True,
    )
    train = Collector(alg.policy, envs, buffer, exploration_noise=True)
    train.reset(seed=SEED)
    train.collect(n_step=p.warmup_steps, random=True)
    eps = _eps_schedule(p)
    phases = {"collect": 0.0, "update": 0.0}
    _timed(train, "collect", phases, "collect")
    _timed(alg, "update", phases, "update")
    trainer = OffPolicyTrainer(
        alg,
        train,
        max_epochs=1,
        step_per_epoch=steps,
        step_per_collect=p.step_per_collect,
        update_per_step=p.update_per_step,
        batch_size=p.batch_size,
        train_fn=lambda epoch, env_step: alg.policy.set_eps_training(eps(env_step)),
        show_progress=False,
        verbose=False,
    )
    start = time.perf_counter()
    result = trainer.run()
    phases["total"] = time.perf_counter() - start
    phases["steps"] = float(result.env_step)
    envs.close()
    return phases


def run_tianshou(steps: int, weights: list[torch.Tensor]) -> dict[str, float]:
    """The same run with Tianshou 2.0.1 (``examples/atari/atari_dqn.py``'s setup)."""
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.atari.atari_network import DQNet
    from tianshou.trainer import OffPolicyTrainerParams

    from tdrl import presets

    wrap = _tianshou_wrap()
    p: Any = presets.preset("dqn", TASK)
    _seed(SEED)
    envs = DummyVectorEnv([lambda: wrap(gym.make(TASK))] * p.training_num)
    net = DQNet(c=4, h=84, w=84, action_shape=6)
    net.load_state_dict(dict(zip(net.state_dict(), weights)))
    policy = DiscreteQLearningPolicy(
        model=net,
        action_space=envs.action_space[0],
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    algorithm = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=p.lr),
        gamma=p.gamma,
        n_step_return_horizon=p.n_step,
        target_update_freq=p.target_update_freq,
    )
    buffer = VectorReplayBuffer(
        p.buffer_size,
        buffer_num=p.training_num,
        ignore_obs_next=True,
        save_only_last_obs=True,
        stack_num=p.frames_stack,
    )
    envs.seed(SEED)
    train: Any = Collector(algorithm, envs, buffer, exploration_noise=True)
    train.reset()
    train.collect(n_step=p.warmup_steps, random=True)
    eps = _eps_schedule(p)
    phases = {"collect": 0.0, "update": 0.0}
    _timed(train, "collect", phases, "collect")
    _timed(algorithm, "update", phases, "update")
    params = OffPolicyTrainerParams(
        training_collector=train,
        test_collector=None,
        max_epochs=1,
        epoch_num_steps=steps,
        collection_step_num_env_steps=p.step_per_collect,
        update_step_num_gradient_steps_per_sample=p.update_per_step,
        batch_size=p.batch_size,
        training_fn=lambda epoch, env_step: policy.set_eps_training(eps(env_step)),
        test_in_training=False,
        logger=None,
        verbose=False,
        show_progress=False,
    )
    trainer = algorithm.create_trainer(params)
    start = time.perf_counter()
    info = trainer.run()
    phases["total"] = time.perf_counter() - start
    phases["steps"] = float(info.train_step)
    envs.close()
    return phases


def wrapper_rates(steps: int) -> tuple[float, float]:
    """Env steps per second of each library's ``wrap_deepmind`` alone (same actions)."""
    import tdrl.env.atari as atari

    wrap = _tianshou_wrap()
    envs = {"tdrl": atari.wrap_deepmind(gym.make(TASK)), "tianshou": wrap(gym.make(TASK))}
    spent = dict.fromkeys(envs, 0.0)
    actions = np.random.default_rng(SEED).integers(6, size=steps)
    for env in envs.values():
        env.reset(seed=SEED)
    for a in actions:  # alternating step by step: load drifts hit both
        for name, env in envs.items():
            start = time.perf_counter()
            if any(env.step(int(a))[2:4]):
                env.reset()
            spent[name] += time.perf_counter() - start
    return steps / spent["tdrl"], steps / spent["tianshou"]


def _line(name: str, r: dict[str, float]) -> str:
    rest = r["total"] - r["collect"] - r["update"]
    return (
        f"{name:<9} {r['steps'] / r['total']:7.0f} env steps/s  ({r['steps']:.0f} steps in "
        f"{r['total']:5.1f} s: collect {r['collect']:5.1f} s, update {r['update']:5.1f} s, "
        f"rest {rest:5.1f} s)"
    )


def main() -> None:
    """Time both sides (after a tiny untimed run of each) and print the comparison."""
    import tdrl.env.atari  # noqa: F401  (registers ale-py's envs)

    begin = time.perf_counter()
    torch.set_num_threads(1)
    weights = _initial_weights()
    with contextlib.redirect_stdout(io.StringIO()):  # imports, numba JIT, first torch calls
        run_tdrl(20, weights)
        run_tianshou(20, weights)
    ours_w, peer_w = wrapper_rates(WRAPPER_STEPS)
    record("wrap_deepmind", kind="wrapper", steps=WRAPPER_STEPS, tdrl_sps=ours_w, peer_sps=peer_w)
    print(
        f"wrap_deepmind alone (1 env, random actions): tdrl {ours_w:6.0f} env steps/s, "
        f"tianshou {peer_w:6.0f} env steps/s, speed-up {ours_w / peer_w:4.2f}x",
        flush=True,
    )
    ours = run_tdrl(STEPS, weights)
    print(_line("tdrl", ours), flush=True)
    peer = run_tianshou(STEPS, weights)
    print(_line("tianshou", peer), flush=True)
    rate = ours["steps"] / ours["total"], peer["steps"] / peer["total"]
    core = (
        ours["steps"] / (ours["collect"] + ours["update"]),
        peer["steps"] / (peer["collect"] + peer["update"]),
    )
    print(
        f"DQN on {TASK}, 10 envs: tdrl {rate[0]:.0f} vs tianshou {rate[1]:.0f} env steps/s "
        f"= speed-up {rate[0] / rate[1]:4.2f}x (collect + update alone: "
        f"{core[0] / core[1]:4.2f}x)",
        flush=True,
    )
    record(f"dqn {TASK}", kind="train", task=TASK, envs=10, tdrl=ours, tianshou=peer)
    print(f"(bench_atari took {time.perf_counter() - begin:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
