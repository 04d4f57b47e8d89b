"""The eager floor: tdrl's and Tianshou's updates against the same math written bare.

For DQN, C51 and Rainbow on CartPole-v1 and TD3 on Pendulum-v1 (the presets' networks,
batch sizes and hyperparameters; Rainbow's buffers prioritized), one process times, in
alternating rounds:

* ``floor``: the update written from scratch in plain PyTorch, CleanRL style: an
  ``nn.Sequential`` per network, the batch already in tensors (no sampling, the n-step
  reward and discount given), the losses, one backward and a fused Adam step (TD3: both
  critics under one backward and one optimizer, the actor every second step, the target
  networks soft-updated with one ``_foreach_lerp_``; Rainbow: a dueling network with noisy
  streams, new noise in both networks every step, importance weights in the batch). No
  library code at all: what eager
  PyTorch costs for this math on this machine;
* ``tdrl``: ``algorithm.update(buffer, batch_size)`` on a buffer of random transitions
  (sampling and the n-step returns included);
* ``tianshou``: Tianshou 2.0.1's ``algorithm.update`` on the same kind of buffer.

Printed per row: the three times (ms per update; TD3's are per update averaged over an
actor and a critic-only step), ``tdrl/ts`` and ``floor/ts``. ``floor/ts`` bounds from
below the update ratio any eager library can reach against Tianshou here: the zoo's
per-step goal (``python -m benchmarks train_zoo``) asks for 0.4 at the median, and a row
whose floor ratio is near that cannot meet it by cutting library overhead alone.

    python -m benchmarks floor
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.bench_algorithm import N_ENVS, _fill
from benchmarks.bench_step import median_of_alternating
from benchmarks.timing import record

ROWS: dict[str, str] = {
    "dqn": "CartPole-v1",
    "c51": "CartPole-v1",
    "rainbow": "CartPole-v1",
    "td3": "Pendulum-v1",
}
"""Row (algorithm) -> task."""

FILL = 2000
"""Vector steps of random transitions in each side's buffer."""


def mlp(sizes: list[int], out_act: nn.Module | None = None) -> nn.Sequential:
    """Linear layers of ``sizes`` with ReLU between them (and ``out_act`` after the last).

    >>> mlp([4, 8, 2])
    Sequential(
      (0): Linear(in_features=4, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=2, bias=True)
    )
    """
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    if out_act is not None:
        layers.append(out_act)
    return nn.Sequential(*layers)


def _adam(params: Any, lr: float) -> torch.optim.Adam:
    return torch.optim.Adam(list(params), lr=lr, fused=True)


class FloorDQN:
    """Double DQN on a fixed batch: ``y = R + d Q'(s', argmax_a Q(s', a))``, MSE, Adam."""

    def __init__(self, p: Any, obs_dim: int, n_act: int, batch: dict[str, torch.Tensor]):
        self.q = mlp([obs_dim, *p.hidden_sizes, n_act])
        self.q_old = copy.deepcopy(self.q)
        self.optim = _adam(self.q.parameters(), p.lr)
        self.b = batch

    def update(self) -> float:
        """One gradient step; returns the loss."""
        b = self.b
        with torch.no_grad():
            a2 = self.q(b["obs_next"]).argmax(-1, keepdim=True)
            y = b["rew"] + b["discount"] * self.q_old(b["obs_next"]).gather(1, a2).squeeze(1)
        q = self.q(b["obs"]).gather(1, b["act"].unsqueeze(1)).squeeze(1)
        loss = (q - y).pow(2).mean()
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()
        return float(loss.detach())


class FloorC51:
    """C51 on a fixed batch: the target distribution projected onto the support, the
    cross-entropy to the taken action's distribution (weighted by ``weight`` when the batch
    has importance weights), Adam."""

    def __init__(self, p: Any, obs_dim: int, n_act: int, batch: dict[str, torch.Tensor]):
        self.n_act, self.atoms = n_act, p.num_atoms
        self.q = self.network(p, obs_dim, n_act)
        self.q_old = copy.deepcopy(self.q)
        self.optim = _adam(self.q.parameters(), p.lr)
        self.v_min, self.v_max = p.v_min, p.v_max
        self.support = torch.linspace(p.v_min, p.v_max, p.num_atoms)
        self.delta = (p.v_max - p.v_min) / (p.num_atoms - 1)
        self.b = batch

    def network(self, p: Any, obs_dim: int, n_act: int) -> nn.Module:
        """Logits ``[B, n_act * atoms]``."""
        return mlp([obs_dim, *p.hidden_sizes, n_act * p.num_atoms])

    def probs(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        """``[B, n_act, atoms]`` probabilities."""
        return net(obs).view(-1, self.n_act, self.atoms).softmax(-1)

    def loss(self) -> torch.Tensor:
        """The (weighted) mean cross-entropy to the projected target."""
        b, rows = self.b, torch.arange(len(self.b["act"]))
        with torch.no_grad():
            a2 = (self.probs(self.q, b["obs_next"]) * self.support).sum(-1).argmax(-1)
            p2 = self.probs(self.q_old, b["obs_next"])[rows, a2]
            tz = (b["rew"][:, None] + b["discount"][:, None] * self.support).clamp(
                self.v_min, self.v_max
            )
            pos = (tz - self.v_min) / self.delta
            lo = pos.floor().long()
            hi = (lo + 1).clamp(max=self.atoms - 1)
            m = torch.zeros_like(p2)
            m.scatter_add_(1, lo, p2 * (lo + 1 - pos))
            m.scatter_add_(1, hi, p2 * (pos - lo))
        p = self.probs(self.q, b["obs"])[rows, b["act"]]
        ce = -(m * torch.log(p + 1e-8)).sum(-1)
        return (ce * b["weight"]).mean() if "weight" in b else ce.mean()

    def update(self) -> float:
        """One gradient step; returns the loss."""
        loss = self.loss()
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()
        return float(loss.detach())


class NoisyLinear(nn.Module):
    """Factorised Gaussian noisy linear layer (NoisyNet): ``W = mu + sigma * outer(f(e_out),
    f(e_in))``, ``f(x) = sign(x) sqrt|x|``; new noise only from :meth:`resample`."""

    e_in: torch.Tensor
    e_out: torch.Tensor

    def __init__(self, n_in: int, n_out: int, std: float) -> None:
        super().__init__()
        bound = n_in**-0.5
        self.w_mu = nn.Parameter(torch.empty(n_out, n_in).uniform_(-bound, bound))
        self.w_sigma = nn.Parameter(torch.full((n_out, n_in), std * bound))
        self.b_mu = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))
        self.b_sigma = nn.Parameter(torch.full((n_out,), std * bound))
        self.register_buffer("e_in", torch.zeros(n_in))
        self.register_buffer("e_out", torch.zeros(n_out))
        self.resample()

    @torch.no_grad()
    def resample(self) -> None:
        """Draw ``e_in`` then ``e_out``."""
        for e in (self.e_in, self.e_out):
            e.normal_()
            e.copy_(e.sign() * e.abs().sqrt())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x W^T + b`` with the current noise."""
        w = self.w_mu + self.w_sigma * torch.outer(self.e_out, self.e_in)
        return F.linear(x, w, self.b_mu + self.b_sigma * self.e_out)


class _DuelingNoisy(nn.Module):
    def __init__(self, p: Any, obs_dim: int, n_act: int) -> None:
        super().__init__()
        self.n_act, self.atoms = n_act, p.num_atoms
        h = list(p.hidden_sizes)
        self.trunk = nn.Sequential(mlp([obs_dim, *h]), nn.ReLU())
        self.advantage = NoisyLinear(h[-1], n_act * p.num_atoms, p.noisy_std)
        self.value = NoisyLinear(h[-1], p.num_atoms, p.noisy_std)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        h = self.trunk(obs)
        a = self.advantage(h).view(-1, self.n_act, self.atoms)
        return a - a.mean(1, keepdim=True) + self.value(h).view(-1, 1, self.atoms)


class FloorRainbow(FloorC51):
    """Rainbow on a fixed batch: C51's loss on a dueling network with noisy streams, new
    noise in the online and the target network before every step, importance weights."""

    def network(self, p: Any, obs_dim: int, n_act: int) -> nn.Module:
        """A ReLU trunk, then noisy advantage and value streams (dueling logits)."""
        return _DuelingNoisy(p, obs_dim, n_act)

    def update(self) -> float:
        """New noise, then C51's gradient step; returns the loss."""
        for net in (self.q, self.q_old):
            for layer in net.modules():
                if isinstance(layer, NoisyLinear):
                    layer.resample()
        return super().update()


class FloorTD3:
    """TD3 on a fixed batch: clipped target-policy noise, the smaller of two target
    critics, both critics every step, the actor and the soft target update every
    ``update_actor_freq`` steps."""

    def __init__(self, p: Any, obs_dim: int, act_dim: int, batch: dict[str, torch.Tensor]):
        h = list(p.hidden_sizes)
        self.actor = mlp([obs_dim, *h, act_dim], nn.Tanh())
        self.critics = nn.ModuleList([mlp([obs_dim + act_dim, *h, 1]) for _ in range(2)])
        self.actor_old, self.critics_old = copy.deepcopy(self.actor), copy.deepcopy(self.critics)
        self.actor_optim = _adam(self.actor.parameters(), p.actor_lr)
        self.critic_optim = _adam(self.critics.parameters(), p.critic_lr)
        self.online: list[torch.Tensor] = [*self.actor.parameters(), *self.critics.parameters()]
        self.lagged: list[torch.Tensor] = [
            *self.actor_old.parameters(),
            *self.critics_old.parameters(),
        ]
        self.p, self.b, self.step = p, batch, 0

    def update(self) -> float:
        """One gradient step; returns the critics' loss."""
        b, p = self.b, self.p
        with torch.no_grad():
            a2 = self.actor_old(b["obs_next"])
            a2 = a2 + (torch.randn_like(a2) * p.policy_noise).clamp(-p.noise_clip, p.noise_clip)
            x2 = torch.cat([b["obs_next"], a2], -1)
            q2 = torch.min(self.critics_old[0](x2), self.critics_old[1](x2)).squeeze(-1)
            y = (b["rew"] + b["discount"] * q2).unsqueeze(-1)
        x = torch.cat([b["obs"], b["act"]], -1)
        loss = (self.critics[0](x) - y).pow(2).mean() + (self.critics[1](x) - y).pow(2).mean()
        self.critic_optim.zero_grad(set_to_none=True)
        loss.backward()
        self.critic_optim.step()
        if self.step % p.update_actor_freq == 0:
            actor_loss = -self.critics[0](torch.cat([b["obs"], self.actor(b["obs"])], -1)).mean()
            self.actor_optim.zero_grad(set_to_none=True)
            actor_loss.backward(inputs=list(self.actor.parameters()))
            self.actor_optim.step()
            with torch.no_grad():
                torch._foreach_lerp_(self.lagged, self.online, p.tau)
        self.step += 1
        return float(loss.detach())


FLOORS: dict[str, type] = {
    "dqn": FloorDQN,
    "c51": FloorC51,
    "rainbow": FloorRainbow,
    "td3": FloorTD3,
}


def _act_fn(space: gym.Space) -> Callable[[np.random.Generator], np.ndarray]:
    """Random actions of ``space`` for :func:`benchmarks.bench_algorithm._fill`."""
    if isinstance(space, gym.spaces.Discrete):
        return lambda rng: rng.integers(0, int(space.n), N_ENVS)
    shape = (N_ENVS, *space.shape)  # type: ignore[misc]
    return lambda rng: rng.uniform(-1, 1, shape).astype(np.float32)


def _buffers(space: gym.Space, obs_dim: int, prio: tuple[float, float] | None) -> Any:
    """A tdrl and a Tianshou vector buffer holding the same random transitions
    (prioritized with ``prio = (alpha, beta)``)."""
    from tianshou.data import Batch as TBatch
    from tianshou.data import PrioritizedVectorReplayBuffer as TPVRB
    from tianshou.data import VectorReplayBuffer as TVRB

    from tdrl.data import Batch, PrioritizedVectorReplayBuffer, VectorReplayBuffer

    size = N_ENVS * FILL
    ours: Any
    peer: Any
    if prio is None:
        ours, peer = VectorReplayBuffer(size, N_ENVS), TVRB(size, N_ENVS)
    else:
        ours = PrioritizedVectorReplayBuffer(size, N_ENVS, alpha=prio[0], beta=prio[1])
        peer = TPVRB(size, N_ENVS, alpha=prio[0], beta=prio[1])
    _fill(
        lambda d: ours.add(Batch(d, batch_size=[N_ENVS])),
        lambda d: peer.add(TBatch(info={}, **d)),
        obs_dim,
        _act_fn(space),
        FILL,
    )
    return ours, peer


def _fixed_batch(
    space: gym.Space, obs_dim: int, n: int, gamma: float, n_step: int, weighted: bool = False
) -> Any:
    """``n`` random transitions as tensors, with the n-step ``discount`` (and importance
    ``weight`` around 1 when ``weighted``)."""
    rows: list[dict[str, np.ndarray]] = []
    _fill(rows.append, lambda d: None, obs_dim, _act_fn(space), -(-n // N_ENVS), seed=1)
    b = {k: torch.as_tensor(np.concatenate([r[k] for r in rows])[:n]) for k in rows[0]}
    b["discount"] = torch.full((n,), gamma**n_step) * (~b["terminated"]).float()
    if weighted:
        rng = np.random.default_rng(2)
        b["weight"] = torch.as_tensor(rng.uniform(0.5, 1.0, n).astype(np.float32))
    return b


def measure(algo: str, rounds: int = 9, number: int = 40) -> dict[str, float]:
    """Median seconds per update of the floor, tdrl and Tianshou for one row."""
    from tianshou.utils.torch_utils import policy_within_training_step

    from benchmarks.bench_roofline import preset_algorithm
    from benchmarks.tianshou_builders import preset, tianshou_algorithm
    from tdrl.algorithm import within_training_step

    task = ROWS[algo]
    env = gym.make(task)
    obs_dim = int(np.prod(env.observation_space.shape))  # type: ignore[arg-type]
    space = env.action_space
    env.close()
    n_act = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.prod(space.shape))  # type: ignore[arg-type]
    p = preset(algo)
    torch.manual_seed(0)
    ours = preset_algorithm(algo, task)
    bs = int(p.batch_size)
    peer = tianshou_algorithm(algo, gym.spaces.Box(-np.inf, np.inf, (obs_dim,)), space)
    prio = (p.alpha, p.beta) if getattr(p, "prioritized_replay", False) else None
    b_ours, b_peer = _buffers(space, obs_dim, prio)
    batch = _fixed_batch(space, obs_dim, bs, p.gamma, p.n_step, weighted=prio is not None)
    floor = FLOORS[algo](p, obs_dim, n_act, batch)
    runs = [floor.update, lambda: ours.update(b_ours, bs), lambda: peer.update(b_peer, bs)]
    with within_training_step(ours.policy), policy_within_training_step(peer.policy):
        t_floor, t_ours, t_peer = median_of_alternating(runs, number, rounds)
    return {"floor": t_floor, "tdrl": t_ours, "tianshou": t_peer}


def main() -> None:
    """Print (and record) the floor table."""
    torch.set_num_threads(1)
    print(f"{'row':8s} {'floor ms':>9s} {'tdrl ms':>8s} {'ts ms':>7s} {'tdrl/ts':>8s} "
          f"{'floor/ts':>9s}   (median of alternating rounds; one thread)")  # fmt: skip
    for algo in ROWS:
        m = measure(algo)
        tdrl_ts, floor_ts = m["tdrl"] / m["tianshou"], m["floor"] / m["tianshou"]
        print(f"{algo:8s} {m['floor'] * 1e3:9.2f} {m['tdrl'] * 1e3:8.2f} "
              f"{m['tianshou'] * 1e3:7.2f} {tdrl_ts:8.2f} {floor_ts:9.2f}")  # fmt: skip
        record(
            f"{algo} update floor",
            kind="floor",
            algo=algo,
            task=ROWS[algo],
            floor_ms=m["floor"] * 1e3,
            tdrl_ms=m["tdrl"] * 1e3,
            tianshou_ms=m["tianshou"] * 1e3,
            tdrl_over_tianshou=tdrl_ts,
            floor_over_tianshou=floor_ts,
        )


if __name__ == "__main__":
    main()
