"""Stable-Baselines3 2.x and SBX (SB3 on JAX): ``model.learn`` with tdrl's preset values.

Both run over SB3's ``DummyVecEnv`` (``make_vec_env``: env ``i`` seeded ``seed + i``) with
the preset's number of envs. Every argument that differs from the library's default is set
here to the preset's value (see :mod:`benchmarks.peers.alignment` for the list and what
could not be aligned). Tests run from a callback at the start of a rollout (after the
previous update), off the clock: ``evaluate_policy`` on ``eval_episodes`` envs,
deterministic actions.
"""

from __future__ import annotations

from typing import Any

from benchmarks.peers.core import EvalLog, Row, preset

TEST_SEED_OFFSET = 100_000


def kwargs_for(row: Row, flavor: str) -> dict[str, Any]:
    """The constructor arguments of ``flavor``'s (``"sb3"`` or ``"sbx"``) algorithm for
    ``row``: the preset's values where the library's defaults differ (no imports).

    >>> from benchmarks.peers.core import ROWS
    >>> kw = kwargs_for(ROWS["dqn-cartpole"], "sb3")
    >>> kw["target_update_interval"], kw["train_freq"], kw["gradient_steps"]
    (3200, 1, 1)
    """
    p = preset(row)
    n_envs = p.training_num
    if row.algo == "dqn":
        # one gradient step per collect of step_per_collect env steps (update_per_step 0.1)
        per_collect = p.step_per_collect // n_envs  # vec steps per collect
        updates = round(p.step_per_collect * p.update_per_step)
        kw: dict[str, Any] = dict(
            learning_rate=p.lr,
            buffer_size=p.buffer_size,
            learning_starts=row.warmup,
            batch_size=p.batch_size,
            tau=1.0,  # hard target update
            gamma=p.gamma,
            train_freq=per_collect,
            gradient_steps=updates,
            n_steps=p.n_step,
            # tdrl counts target updates in gradient steps, SB3 in env steps
            target_update_interval=p.target_update_freq * p.step_per_collect // updates,
            exploration_initial_eps=p.eps_train,  # constant epsilon
            exploration_final_eps=p.eps_train,
            exploration_fraction=1.0,
        )
        if flavor == "sb3":
            kw["max_grad_norm"] = float("inf")  # tdrl does not clip DQN's gradients
        return kw
    if row.algo == "ppo":
        return dict(
            learning_rate=p.lr,
            n_steps=p.step_per_collect // n_envs,  # per env
            batch_size=p.batch_size,
            n_epochs=p.repeat_per_collect,
            gamma=p.gamma,
            gae_lambda=p.gae_lambda,
            clip_range=p.eps_clip,
            clip_range_vf=None,
            normalize_advantage=p.advantage_normalization,
            ent_coef=p.ent_coef,
            vf_coef=p.vf_coef,
            max_grad_norm=p.max_grad_norm,
        )
    if row.algo == "sac":
        kw = dict(
            learning_rate=p.actor_lr,
            buffer_size=p.buffer_size,
            learning_starts=row.warmup,
            batch_size=p.batch_size,
            tau=p.tau,
            gamma=p.gamma,
            train_freq=max(1, p.step_per_collect // n_envs),
            gradient_steps=round(p.step_per_collect * p.update_per_step),
            ent_coef=f"auto_{p.alpha}" if p.auto_alpha else float(p.alpha),
            target_entropy="auto",
        )
        if flavor == "sbx":
            kw["qf_learning_rate"] = p.critic_lr
        return kw
    raise ValueError(f"no SB3 mapping for {row.algo!r}")


def policy_kwargs_for(row: Row, flavor: str) -> dict[str, Any]:
    """Network sizes and activations of tdrl's preset, in SB3's / SBX's terms."""
    p = preset(row)
    hidden = list(p.hidden_sizes)
    if row.algo == "ppo":
        if flavor == "sb3":
            import torch

            # plain PyTorch init as tdrl's classic PPO (SB3's default is orthogonal)
            act: Any = torch.nn.Tanh
            return dict(net_arch=dict(pi=hidden, vf=hidden), activation_fn=act, ortho_init=False)
        import flax.linen as nn

        return dict(net_arch=dict(pi=hidden, vf=hidden), activation_fn=nn.tanh, ortho_init=False)
    return dict(net_arch=hidden)  # DQN, SAC: ReLU is both libraries' default


def _sbx_dqn_policy() -> type:
    """SBX's ``DQNPolicy`` with an MLP of any depth (SBX's ``QNetwork`` has two hidden
    layers of ``net_arch[0]`` units; tdrl's DQN preset has three of 128)."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from sbx.common.type_aliases import RLTrainState
    from sbx.dqn.policies import DQNPolicy

    class MLPQNetwork(nn.Module):  # type: ignore[misc]
        n_actions: int
        hidden: tuple[int, ...]

        @nn.compact
        def __call__(self, x: Any) -> Any:
            x = x.reshape((x.shape[0], -1))
            for h in self.hidden:
                x = nn.relu(nn.Dense(h)(x))
            return nn.Dense(self.n_actions)(x)

    class MLPDQNPolicy(DQNPolicy):  # type: ignore[misc]
        def __init__(
            self,
            observation_space: Any,
            action_space: Any,
            lr_schedule: Any,
            net_arch: list[int] | None = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(observation_space, action_space, lr_schedule, net_arch, **kwargs)
            self.hidden = tuple(net_arch or [256, 256])

        def build(self, key: Any, lr_schedule: Any) -> Any:  # SBX's build, any depth
            key, qf_key = jax.random.split(key, 2)
            obs = jnp.array([self.observation_space.sample()])
            self.qf = MLPQNetwork(n_actions=int(self.action_space.n), hidden=self.hidden)
            self.qf_state = RLTrainState.create(
                apply_fn=self.qf.apply,
                params=self.qf.init({"params": qf_key}, obs),
                target_params=self.qf.init({"params": qf_key}, obs),
                tx=self.optimizer_class(  # type: ignore[call-arg]
                    learning_rate=lr_schedule(1), **self.optimizer_kwargs
                ),
            )
            self.qf.apply = jax.jit(self.qf.apply)  # type: ignore[method-assign]
            return key

    return MLPDQNPolicy


def build(row: Row, seed: int, flavor: str) -> tuple[Any, Any]:
    """(model, eval env) for ``row`` with ``flavor`` (``"sb3"`` or ``"sbx"``)."""
    from stable_baselines3.common.env_util import make_vec_env

    p = preset(row)
    if flavor == "sb3":
        import stable_baselines3 as lib
    else:
        import sbx as lib  # type: ignore[no-redef]
    env = make_vec_env(row.task, n_envs=p.training_num, seed=seed)
    eval_env = make_vec_env(row.task, n_envs=row.eval_episodes, seed=seed + TEST_SEED_OFFSET)
    cls = {"dqn": lib.DQN, "ppo": lib.PPO, "sac": lib.SAC}[row.algo]
    policy: Any = "MlpPolicy"
    if flavor == "sbx" and row.algo == "dqn":
        policy = _sbx_dqn_policy()
    extra = {"device": "cpu"} if flavor == "sb3" else {}
    model = cls(
        policy,
        env,
        policy_kwargs=policy_kwargs_for(row, flavor),
        seed=seed,
        verbose=0,
        **kwargs_for(row, flavor),
        **extra,
    )
    return model, eval_env


def run(row: Row, seed: int, log: EvalLog, flavor: str = "sb3") -> int:
    """Train ``row`` with SB3 (``flavor="sb3"``) or SBX; return the env steps collected."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    model, eval_env = build(row, seed, flavor)
    first = row.warmup + row.eval_every

    class Tests(BaseCallback):  # type: ignore[misc]
        """A test when a rollout starts (the previous update done) at each test point."""

        next_at = first

        def _test(self) -> None:
            if self.num_timesteps < self.next_at:
                return
            self.next_at += row.eval_every

            def once() -> float:
                mean, _ = evaluate_policy(
                    self.model, eval_env, n_eval_episodes=row.eval_episodes, deterministic=True
                )
                return float(mean)  # type: ignore[arg-type]

            log.evaluate(self.num_timesteps, once)

        def _on_rollout_start(self) -> None:
            self._test()

        def _on_training_end(self) -> None:
            self._test()

        def _on_step(self) -> bool:
            return True

    try:
        log.start()
        model.learn(total_timesteps=row.env_steps, callback=Tests())
        log.stop()
    finally:
        model.get_env().close()
        eval_env.close()
    return int(model.num_timesteps)
