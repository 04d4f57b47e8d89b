"""TorchRL 0.14's own loss modules, collector and replay buffer, in a loop written here.

TorchRL's wheel has no trainers for these rows (its ``sota-implementations`` live in its
repository), so the loop follows them: a ``Collector`` over the envs (``SerialEnv`` of
``GymEnv``, in-process as everyone's vector envs here), ``init_random_frames`` for the
warm-up, a ``ReplayBuffer`` on a ``LazyTensorStorage``, the loss module, its
target updater and ``torch.optim.Adam``; tests roll the policy out in deterministic mode.

* DQN: ``QValueActor`` + ``EGreedyModule`` (constant epsilon), ``DQNLoss(double_dqn=True,
  loss_function="l2")``, ``MultiStepTransform`` on the buffer for the n-step return,
  ``HardUpdate`` every ``target_update_freq`` updates;
* PPO: a categorical ``ProbabilisticActor`` and a ``ValueOperator``, ``GAE`` once per
  collect, ``ClipPPOLoss(loss_critic_type="l2", entropy_bonus=False)``, minibatches from a
  ``SamplerWithoutReplacement``, gradient norm clipped;
* SAC: a ``TanhNormal`` actor, ``SACLoss`` (two Q nets, vmapped), ``SoftUpdate``, three Adams
  (actor, critics, alpha) stepped after one backward of the summed losses, as the SOTA
  script does.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

from benchmarks.peers.core import EvalLog, Row, preset

TEST_SEED_OFFSET = 100_000


def make_env(task: str, n: int, seed: int) -> Any:
    """``n`` in-process envs of ``task`` (one ``GymEnv`` when ``n == 1``), float32, seeded."""
    from torchrl.envs import DoubleToFloat, GymEnv, SerialEnv, TransformedEnv

    def one() -> Any:
        return TransformedEnv(GymEnv(task, categorical_action_encoding=True), DoubleToFloat())

    env = SerialEnv(n, one) if n > 1 else one()
    env.set_seed(seed)
    return env


def test_return(env: Any, policy: Any, max_steps: int) -> float:
    """Mean return of each env's first episode, deterministic actions."""
    import torch
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        td = env.rollout(max_steps, policy, break_when_any_done=False)
    reward = td["next", "reward"].reshape(*td.batch_size)
    done = td["next", "done"].reshape(*td.batch_size).int()
    first = (done.cumsum(-1) - done) == 0  # up to and including the first done
    return float((reward * first).sum(-1).mean())


def _dqn(p: Any, env: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(exploration policy, test policy, update function, buffer transform, loss)."""
    import torch
    from tensordict.nn import TensorDictSequential
    from torchrl.modules import MLP, EGreedyModule, QValueActor
    from torchrl.objectives import DQNLoss, HardUpdate

    spec = env.action_spec_unbatched
    obs_dim = env.observation_spec_unbatched["observation"].shape[-1]
    net = MLP(
        in_features=obs_dim,
        out_features=int(spec.space.n),
        num_cells=list(p.hidden_sizes),
        activation_class=torch.nn.ReLU,
    )
    qvalue = QValueActor(net, in_keys=["observation"], spec=spec)
    greedy = EGreedyModule(spec, eps_init=p.eps_train, eps_end=p.eps_train, annealing_num_steps=1)
    explore = TensorDictSequential(qvalue, greedy)
    loss = DQNLoss(qvalue, loss_function="l2", delay_value=True, double_dqn=True, action_space=spec)
    loss.make_value_estimator(gamma=p.gamma)
    target = HardUpdate(loss, value_network_update_interval=p.target_update_freq)
    optim = torch.optim.Adam(loss.parameters(), lr=p.lr)

    def update(batch: Any) -> None:
        out = loss(batch)
        optim.zero_grad()
        out["loss"].backward()
        optim.step()
        target.step()

    return explore, qvalue, update, loss, optim


def _sac(p: Any, env: Any) -> tuple[Any, Any, Any, Any, Any]:
    import torch
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.envs.utils import ExplorationType
    from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import SACLoss, SoftUpdate

    spec = env.action_spec_unbatched
    obs_dim = env.observation_spec_unbatched["observation"].shape[-1]
    act_dim = spec.shape[-1]
    hidden = list(p.hidden_sizes)
    relu = torch.nn.ReLU
    body = MLP(
        in_features=obs_dim, out_features=2 * act_dim, num_cells=hidden, activation_class=relu
    )
    module = TensorDictModule(
        torch.nn.Sequential(body, NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    )
    actor = ProbabilisticActor(
        module,
        in_keys=["loc", "scale"],
        spec=spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high, "tanh_loc": False},
        default_interaction_type=ExplorationType.RANDOM,
    )
    qnet = MLP(
        in_features=obs_dim + act_dim, out_features=1, num_cells=hidden, activation_class=relu
    )
    qvalue = ValueOperator(qnet, in_keys=["observation", "action"])
    loss = SACLoss(
        actor,
        qvalue,
        num_qvalue_nets=2,
        loss_function="l2",
        alpha_init=p.alpha,
        fixed_alpha=not p.auto_alpha,
        target_entropy="auto",
        action_spec=spec,
        delay_actor=False,
        delay_qvalue=True,
    )
    loss.make_value_estimator(gamma=p.gamma)
    target = SoftUpdate(loss, tau=p.tau)
    actor_opt = torch.optim.Adam(
        list(loss.actor_network_params.flatten_keys().values()), lr=p.actor_lr
    )
    critic_opt = torch.optim.Adam(
        list(loss.qvalue_network_params.flatten_keys().values()), lr=p.critic_lr
    )
    optims = [actor_opt, critic_opt]
    if p.auto_alpha:
        optims.append(torch.optim.Adam([loss.log_alpha], lr=p.alpha_lr))

    def update(batch: Any) -> None:
        out = loss(batch)
        total = out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]
        for o in optims:
            o.zero_grad()
        total.backward()
        for o in optims:
            o.step()
        target.step()

    return actor, actor, update, loss, optims


def _ppo(p: Any, env: Any) -> tuple[Any, Any, Any, Any, Any]:
    import torch
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MLP, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    spec = env.action_spec_unbatched
    obs_dim = env.observation_spec_unbatched["observation"].shape[-1]
    hidden = list(p.hidden_sizes)
    tanh = torch.nn.Tanh
    logits = MLP(
        in_features=obs_dim, out_features=int(spec.space.n), num_cells=hidden, activation_class=tanh
    )
    actor = ProbabilisticActor(
        TensorDictModule(logits, in_keys=["observation"], out_keys=["logits"]),
        in_keys=["logits"],
        spec=spec,
        distribution_class=torch.distributions.Categorical,
        return_log_prob=True,
    )
    critic = ValueOperator(
        MLP(in_features=obs_dim, out_features=1, num_cells=hidden, activation_class=tanh),
        in_keys=["observation"],
    )
    gae = GAE(gamma=p.gamma, lmbda=p.gae_lambda, value_network=critic, average_gae=False)
    loss = ClipPPOLoss(
        actor,
        critic,
        clip_epsilon=p.eps_clip,
        entropy_bonus=p.ent_coef > 0,
        entropy_coeff=p.ent_coef,
        critic_coeff=p.vf_coef,
        loss_critic_type="l2",
        normalize_advantage=p.advantage_normalization,
    )
    optim = torch.optim.Adam(loss.parameters(), lr=p.lr)
    params = list(loss.parameters())

    def update(batch: Any) -> None:
        out = loss(batch)
        total = out["loss_objective"] + out["loss_critic"]
        if "loss_entropy" in out.keys():  # noqa: SIM118 (a TensorDict)
            total = total + out["loss_entropy"]
        optim.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, p.max_grad_norm)
        optim.step()

    return actor, actor, update, gae, optim


def run(row: Row, seed: int, log: EvalLog) -> int:
    """Train ``row`` with TorchRL; return the env steps collected."""
    import torch
    from torchrl.collectors import Collector
    from torchrl.data import (
        LazyTensorStorage,
        ReplayBuffer,
        SamplerWithoutReplacement,
    )
    from torchrl.envs import MultiStepTransform

    p = preset(row)
    torch.manual_seed(seed)
    env = make_env(row.task, p.training_num, seed)
    test_env = make_env(row.task, row.eval_episodes, seed + TEST_SEED_OFFSET)
    max_steps = int(gym.spec(row.task).max_episode_steps or 1000)
    build = {"dqn": _dqn, "sac": _sac, "ppo": _ppo}[row.algo]
    explore, test_policy, update, extra, _ = build(p, env)
    on_policy = row.algo == "ppo"
    frames = p.step_per_collect
    collector = Collector(
        env,
        explore,
        frames_per_batch=frames,
        total_frames=row.env_steps,
        init_random_frames=row.warmup or None,
    )
    if on_policy:
        rb: Any = ReplayBuffer(
            storage=LazyTensorStorage(frames),
            sampler=SamplerWithoutReplacement(),
            batch_size=p.batch_size,
        )
        minibatches = math.ceil(frames / p.batch_size)
    else:
        multi = row.algo == "dqn" and p.n_step > 1
        # ReplayBuffer: its TensorDict variant fails to extend an ndim=2 storage
        rb = ReplayBuffer(
            storage=LazyTensorStorage(p.buffer_size, ndim=2 if multi else 1),
            batch_size=p.batch_size,
            transform=MultiStepTransform(n_steps=p.n_step, gamma=p.gamma) if multi else None,
        )
        updates = round(frames * p.update_per_step)
    collected = 0
    next_test = row.warmup + row.eval_every
    try:
        log.start()
        for data in collector:
            collected += data.numel()
            if on_policy:
                with torch.no_grad():
                    data = extra(data)  # GAE, once per collect
                rb.extend(data.reshape(-1))
                for _ in range(p.repeat_per_collect):
                    for _ in range(minibatches):
                        update(rb.sample())
            else:
                rb.extend(data if multi else data.reshape(-1))
                if collected > row.warmup:
                    for _ in range(updates):
                        update(rb.sample())
            if collected >= next_test:
                next_test += row.eval_every
                log.evaluate(collected, lambda: test_return(test_env, test_policy, max_steps))
        log.stop()
    finally:
        collector.shutdown()
        test_env.close()
    return collected
