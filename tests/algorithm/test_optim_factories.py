"""Tianshou 2.0's optimizer and LR-scheduler factories, with its names and defaults."""

from __future__ import annotations

import torch

from tdrl.algorithm import (
    AdamOptimizerFactory,
    LRSchedulerFactoryLinear,
    RMSpropOptimizerFactory,
    TorchOptimizerFactory,
)


def test_factories_build_what_tianshou_builds() -> None:
    net = torch.nn.Linear(3, 2)
    rms, _ = RMSpropOptimizerFactory().create_instances(net)
    assert isinstance(rms, torch.optim.RMSprop)
    assert {k: rms.defaults[k] for k in ("lr", "alpha", "eps", "momentum", "centered")} == {
        "lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "momentum": 0.0, "centered": False,
    }  # fmt: skip
    adam, sched = AdamOptimizerFactory(lr=3e-4, eps=1e-5).create_instances(net)
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["eps"] == 1e-5 and sched is None
    sgd, _ = TorchOptimizerFactory(torch.optim.SGD, lr=0.5, momentum=0.9).create_instances(net)
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["momentum"] == 0.9


def test_the_linear_schedule_reaches_zero_after_the_runs_updates() -> None:
    factory = AdamOptimizerFactory(lr=1.0)
    assert factory.with_lr_scheduler_factory(LRSchedulerFactoryLinear(3, 1000, 500)) is factory
    opt, sched = factory.create_instances(torch.nn.Linear(2, 1))
    lrs = []
    for _ in range(6):  # 3 epochs x ceil(1000 / 500) updates
        opt.step()
        sched.step()
        lrs.append(round(opt.param_groups[0]["lr"], 4))
    assert lrs == [0.8333, 0.6667, 0.5, 0.3333, 0.1667, 0.0]
