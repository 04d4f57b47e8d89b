"""Where each peer's defaults differ from tdrl's presets, and how the benchmark aligned them.

Every row uses tdrl's preset for it (``tdrl.presets.registry.preset(algo, task)``):
network sizes and activations, optimizer and learning rates, discount, n-step, target
updates, exploration, envs, collect and update schedule, batch size, buffer size, warm-up.
Each entry is ``(algorithm, setting, the peer's default, what the benchmark does)``; those
whose last field starts with ``"not aligned"`` are differences that remain (none changes
how many env steps or gradient steps a run makes, or the network shapes).
"""

from __future__ import annotations

Note = tuple[str, str, str, str]

COMMON: list[str] = [
    "every library: tdrl's preset values, the same envs per collect (DQN 10, PPO 20, "
    "SAC Pendulum 10, SAC Hopper 1), in-process vector envs, env i seeded seed + i",
    "every library: one process per run, pinned to one CPU, torch.set_num_threads(1) and "
    "OMP/MKL_NUM_THREADS=1; for SBX also XLA_FLAGS='--xla_cpu_multi_thread_eigen=false "
    "intra_op_parallelism_threads=1' before jax is imported. On jax 0.10 those flags alone "
    "leave XLA matmuls on three threads; the one-CPU affinity sizes XLA's pool to one",
    "every library: an untimed tiny run of the same row first in the same process (imports, "
    "Tianshou's numba JIT, SBX's XLA compilation where jax's cache carries over)",
    "every library: tests (10 episodes on 10 envs) after every eval_every training steps, "
    "off the clock; tdrl and Tianshou test with their test collectors (DQN: eps_test 0.05), "
    "SB3/SBX/TorchRL with deterministic actions (DQN: greedy)",
]

ALIGNMENT: dict[str, list[Note]] = {
    "tianshou": [
        (
            "all",
            "algorithms",
            "-",
            "benchmarks/tianshou_builders.py, as bench_train: the "
            "same networks, optimizers and schedules as tdrl's presets",
        ),
        ("all", "test-in-train, stop_fn", "on when a stop_fn is given", "off (fixed budget)"),
        (
            "sac",
            "optimizers",
            "one Adam per critic",
            "not aligned: Adam is per parameter, same update",
        ),
    ],
    "sb3": [
        ("dqn", "net_arch", "[64, 64]", "[128, 128, 128], ReLU"),
        (
            "dqn",
            "learning_rate, gamma, batch_size, buffer_size",
            "1e-4, 0.99, 32, 1e6",
            "1e-3, 0.9, 64, 20,000",
        ),
        ("dqn", "learning_starts", "100", "640 (random actions before it, as tdrl's warm-up)"),
        (
            "dqn",
            "train_freq / gradient_steps",
            "4 / 1",
            "1 vec step (10 env steps) / 1: one update per 10 env steps (update_per_step 0.1)",
        ),
        (
            "dqn",
            "target_update_interval",
            "10,000 env steps, tau 1",
            "3,200 env steps = tdrl's 320 updates, tau 1",
        ),
        (
            "dqn",
            "exploration",
            "linear 1.0 -> 0.05 over 10% of the run",
            "constant 0.1 (initial = final = eps_train)",
        ),
        ("dqn", "n_steps", "1", "3"),
        ("dqn", "max_grad_norm", "10", "inf (tdrl does not clip); the norm is still computed"),
        (
            "dqn",
            "double Q",
            "no (max over the target net)",
            "not aligned: SB3 has no double DQN (tdrl's default); one forward fewer per update",
        ),
        ("dqn", "loss", "Huber", "not aligned: tdrl uses MSE"),
        (
            "ppo",
            "n_steps / batch_size / n_epochs",
            "2048 per env / 64 / 10",
            "100 per env x 20 envs = 2,000 per collect / 64 / 10",
        ),
        ("ppo", "net_arch", "pi [64, 64], vf [64, 64], Tanh", "the same"),
        ("ppo", "ortho_init", "True", "False (tdrl's classic PPO: PyTorch's default init)"),
        ("ppo", "normalize_advantage", "True", "False"),
        ("ppo", "Adam eps", "1e-5", "not aligned: tdrl uses 1e-8"),
        ("ppo", "minibatches", "2000/64 = 31 of 64 + 1 of 16 per epoch", "the same as tdrl"),
        ("sac", "net_arch", "[256, 256]", "the preset's: Pendulum [128, 128], Hopper [256, 256]"),
        (
            "sac",
            "learning_rate",
            "3e-4 for actor, critics and alpha",
            "1e-3 (actor and critics); alpha's Adam gets it too: not aligned (tdrl 3e-4); "
            "SB3 re-sets one rate on every optimizer each update",
        ),
        (
            "sac",
            "ent_coef",
            "'auto' starting at 1.0",
            "Pendulum 'auto_0.2' (learned from 0.2), Hopper 0.2 fixed",
        ),
        ("sac", "learning_starts", "100", "1,000 (random actions before it)"),
        (
            "sac",
            "train_freq / gradient_steps",
            "1 / 1",
            "Pendulum 1 vec step (10 env steps) / 10; Hopper 1 / 1: one update per env step",
        ),
        ("sac", "batch_size, buffer_size", "256, 1e6", "Pendulum 128, 20,000; Hopper 256, 1e6"),
    ],
    "sbx": [
        ("all", "hyperparameters", "as SB3's", "aligned as for SB3 (same constructor arguments)"),
        (
            "dqn",
            "network",
            "QNetwork: two hidden layers of net_arch[0] units",
            "a subclass of SBX's DQNPolicy with three layers of 128 (SBX's build, any depth)",
        ),
        ("dqn", "max_grad_norm", "none (no clipping)", "the same as tdrl"),
        ("dqn", "double Q, loss", "no, Huber", "not aligned (as SB3)"),
        ("ppo", "ortho_init", "False", "the same as tdrl"),
        ("sac", "qf_learning_rate", "= learning_rate", "1e-3; alpha's Adam: 1e-3, not aligned"),
        (
            "sac",
            "updates",
            "gradient_steps updates in one jitted lax loop per train()",
            "kept: that is how SBX updates; Pendulum runs 10 per call, Hopper 1",
        ),
    ],
    "torchrl": [
        (
            "all",
            "training loop",
            "none in the wheel (sota-implementations are scripts)",
            "benchmarks/peers/torchrl_peer.py, written against Collector, ReplayBuffer, the "
            "loss modules and their target updaters as the SOTA scripts use them",
        ),
        (
            "all",
            "envs",
            "SOTA scripts: ParallelEnv (processes) or one GymEnv",
            "SerialEnv of GymEnv (in-process, as DummyVectorEnv), DoubleToFloat",
        ),
        ("dqn", "loss", "DQNLoss: l2, no double DQN", "l2 (MSE), double_dqn=True, delay_value"),
        (
            "dqn",
            "n-step",
            "none",
            "MultiStepTransform(3, 0.9) on the buffer; DQNLoss "
            "discounts by gamma ** steps_to_next_obs",
        ),
        (
            "dqn",
            "exploration",
            "EGreedyModule annealing 1.0 -> 0.1",
            "eps_init = eps_end = 0.1; init_random_frames 640",
        ),
        ("dqn", "target update", "HardUpdate(value_network_update_interval)", "every 320 updates"),
        (
            "ppo",
            "loss",
            "ClipPPOLoss: smooth_l1 critic, entropy bonus on",
            "l2 critic x 0.5, no entropy term (ent_coef 0), no advantage normalization",
        ),
        (
            "ppo",
            "advantages",
            "SOTA: GAE recomputed each epoch",
            "GAE once per collect (the preset's recompute_advantage False)",
        ),
        (
            "ppo",
            "minibatches",
            "SOTA: frames // batch (31)",
            "ceil(2000 / 64) = 32 draws from a SamplerWithoutReplacement, as tdrl",
        ),
        (
            "sac",
            "loss",
            "SACLoss: smooth_l1, alpha_init 1.0",
            "l2, alpha_init 0.2, fixed on Hopper, target entropy -dim(A)",
        ),
        (
            "sac",
            "actor",
            "TanhNormal; NormalParamExtractor biased softplus",
            "not aligned: tdrl clamps a log std in [-20, 2]; same network shape",
        ),
        (
            "sac",
            "collect / update",
            "SOTA: 1,000 frames per batch, 1,000 updates after",
            "the preset's: Pendulum 10 frames then 10 updates, Hopper 1 frame then 1 update",
        ),
    ],
}


def notes_text() -> str:
    """The notes as plain text (printed by the benchmark before its runs)."""
    lines = ["Alignment to tdrl's presets:", *(f"  - {c}" for c in COMMON)]
    for lib, notes in ALIGNMENT.items():
        lines.append(f"  {lib}:")
        for algo, setting, default, how in notes:
            lines.append(f"    {algo:<4} {setting}: default {default} -> {how}")
    return "\n".join(lines)
