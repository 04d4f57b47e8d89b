"""RayCollector on a local Ray with 2 workers: counts, buffer contents per sub-buffer,
episode bookkeeping, weight sync, bad input."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import cloudpickle
import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

from tdrl.data import Batch  # noqa: E402
from tdrl.data.buffer import VectorReplayBuffer  # noqa: E402
from tdrl.data.collector import Collector  # noqa: E402
from tdrl.data.distributed import RayCollector  # noqa: E402
from tdrl.env import DummyVectorEnv  # noqa: E402
from tdrl.env.testing import MoveToRightEnv  # noqa: E402

# a local Ray instance per module (10-20 s to start): run with the slow tests
pytestmark = pytest.mark.slow

# the workers unpickle this module's classes by value (no need to import the test module)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

M, K = 2, 2


class StepPolicy(torch.nn.Module):
    """Moves right (action 1) while its ``bias`` is positive, else left; ``eps`` of 1 forces
    right whatever the weights (a plain attribute, synced with the weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.ones(()))
        self.eps = 0.0

    def forward(self, batch: Batch, state: Any = None) -> Batch:
        n = batch.batch_size[0]
        right = bool(self.bias > 0) or self.eps >= 1.0
        act = torch.full((n,), int(right), dtype=torch.long)
        return Batch({"act": act}, batch_size=[n])


def _fns(n: int) -> list:
    # different sizes and time limits: episodes end at different steps in different envs
    return [lambda i=i: MoveToRightEnv(2 + i % 3, max_steps=3 + i) for i in range(n)]


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def rc() -> Iterator[RayCollector]:
    """Two workers of two envs, kept for the module (workers take seconds to start)."""
    collector = RayCollector(
        StepPolicy(),
        _fns(M * K),
        num_workers=M,
        envs_per_worker=K,
        buffer=VectorReplayBuffer(40, M * K),
    )
    yield collector
    collector.close()


def _columns(buf: Any) -> dict[str, np.ndarray]:
    return {
        "obs": buf.obs.numpy(),
        "act": buf.act.numpy(),
        "rew": buf.rew.numpy(),
        "terminated": buf.terminated.numpy(),
        "truncated": buf.truncated.numpy(),
        "obs_next": buf.obs_next.numpy(),
        "env_id": buf.info.env_id.numpy(),
    }


@pytest.mark.filterwarnings("ignore:n_step=9 is not a multiple")
def test_matches_a_local_collector_over_all_envs(rc: RayCollector) -> None:
    policy = StepPolicy()
    local = Collector(policy, DummyVectorEnv(_fns(M * K)), VectorReplayBuffer(40, M * K))
    rc.policy.load_state_dict(policy.state_dict())
    rc.reset(seed=3)
    local.reset(seed=3)
    for n_step in (9, 4, 16):  # 9 -> 12 steps (a multiple of M * K), open episodes carried
        a, b = local.collect(n_step=n_step), rc.collect(n_step=n_step)
        assert a.n_collected_steps == b.n_collected_steps == -(-n_step // 4) * 4
        assert a.n_collected_episodes == b.n_collected_episodes
        assert a.returns.tolist() == b.returns.tolist() and a.lens.tolist() == b.lens.tolist()
    ref, got = _columns(local.buffer), _columns(rc.buffer)
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)
    # each sub-buffer holds its own env's transitions, with the same episode bookkeeping
    idx = np.arange(40)
    assert rc.buffer.prev(idx).tolist() == local.buffer.prev(idx).tolist()
    assert rc.buffer.next(idx).tolist() == local.buffer.next(idx).tolist()
    assert rc.buffer.unfinished_index().tolist() == local.buffer.unfinished_index().tolist()
    assert set(got["env_id"][rc.buffer.sample_indices(0)] // 10) <= {0, 1, 2, 3}
    for ring in range(M * K):
        rows = got["env_id"][ring * 10 : ring * 10 + len(rc.buffer) // 4]
        assert (rows == ring).all()
    assert rc.collect_step == 12 + 4 + 16 and rc.collect_episode == local.collect_episode
    local.env.close()


def test_n_episode_collects_exactly(rc: RayCollector) -> None:
    rc.reset(seed=0)
    stats = rc.collect(n_episode=5)
    assert stats.n_collected_episodes == 5 and len(stats.returns) == 5
    assert stats.n_collected_steps == int(stats.lens.sum())
    assert len(rc.buffer) == stats.n_collected_steps
    assert rc.buffer.unfinished_index().tolist() == []  # only whole episodes


def test_weights_and_attributes_are_pushed_before_each_collect(rc: RayCollector) -> None:
    rc.reset(seed=0)
    rc.collect(n_step=4)
    assert (rc.buffer.act.numpy()[rc.buffer.sample_indices(0)] == 1).all()
    with torch.no_grad():
        rc.policy.bias.fill_(-1.0)  # an update on the learner: the workers now move left
    rc.reset(seed=0)
    rc.collect(n_step=4)
    assert (rc.buffer.act.numpy()[rc.buffer.sample_indices(0)] == 0).all()
    rc.policy.eps = 1.0  # a plain attribute (e.g. an epsilon schedule) travels too
    rc.reset(seed=0)
    rc.collect(n_step=4)
    assert (rc.buffer.act.numpy()[rc.buffer.sample_indices(0)] == 1).all()
    rc.policy.eps = 0.0
    with torch.no_grad():
        rc.policy.bias.fill_(1.0)


def test_random_collect_and_state_dict(rc: RayCollector) -> None:
    rc.reset(seed=1)
    stats = rc.collect(n_step=8, random=True)
    assert stats.n_collected_steps == 8 and len(rc.buffer) == 8
    state = rc.state_dict()
    rc.reset()
    assert len(rc.buffer) == 0 and rc.collect_step == 0
    rc.load_state_dict(state)
    assert len(rc.buffer) == 8 and rc.collect_step == 8


def test_bad_input(rc: RayCollector) -> None:
    with pytest.raises(ValueError, match="num_workers: expected an integer >= 1, got 0"):
        RayCollector(StepPolicy(), _fns(1)[0], num_workers=0)
    with pytest.raises(ValueError, match="envs_per_worker: expected an integer >= 1, got 0"):
        RayCollector(StepPolicy(), _fns(1)[0], num_workers=1, envs_per_worker=0)
    with pytest.raises(ValueError, match=r"expected one factory or .* = 4 factories, got 3"):
        RayCollector(StepPolicy(), _fns(3), num_workers=2, envs_per_worker=2)
    with pytest.raises(ValueError, match=r"at least num_workers .* = 4 sub-buffers, got 2"):
        RayCollector(StepPolicy(), _fns(4), 2, 2, buffer=VectorReplayBuffer(10, 2))
    with pytest.raises(ValueError, match="exactly one of n_step and n_episode"):
        rc.collect()
    with pytest.raises(ValueError, match="render"):
        rc.collect(n_step=4, render=0.1)


def test_worker_error_is_reported() -> None:
    from tdrl.env.testing import FailingEnv

    with RayCollector(None, lambda: FailingEnv(fail_at=2), num_workers=1, num_cpus=0) as bad:
        bad.reset(seed=0)
        with pytest.raises(RuntimeError, match=r"(?s)worker raised ValueError.*deliberate"):
            bad.collect(n_step=4, random=True)
    with pytest.raises(RuntimeError, match="closed"):
        bad.collect(n_step=1, random=True)


@pytest.mark.slow  # ~12 s: two more workers, a SAC epoch
def test_launcher_ray_collectors(tmp_path: Any) -> None:
    from tdrl.launch import ExperimentConfig, build_experiment

    cfg = ExperimentConfig(
        "sac",
        "Pendulum-v1",
        epochs=1,
        step_per_epoch=40,
        training_num=2,
        test_num=2,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        overrides={"warmup_steps": 20, "step_per_collect": 8, "batch_size": 16},
        ray_collectors=2,
    )
    exp = build_experiment(cfg)
    collector = exp.train_collector
    assert isinstance(collector, RayCollector)
    assert collector.num_workers == 2 and collector.envs_per_worker == 2
    assert exp.buffer.buffer_num == 4 and len(exp.buffer) == 20  # the random warm-up
    result = exp.run()
    assert result.env_step == 40 and len(exp.buffer) == 60
    assert result.gradient_step == 40
    assert collector._closed and collector.workers == []
