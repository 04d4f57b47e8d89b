"""``tianshou.algorithm.optim`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.optim",
    {
        "AdamOptimizerFactory": "tdrl.algorithm:AdamOptimizerFactory",
        "RMSpropOptimizerFactory": "tdrl.algorithm:RMSpropOptimizerFactory",
        "OptimizerFactory": "tdrl.algorithm:OptimizerFactory",
        "TorchOptimizerFactory": "tdrl.algorithm:TorchOptimizerFactory",
        "LRSchedulerFactory": "tdrl.algorithm:LRSchedulerFactory",
        "LRSchedulerFactoryLinear": "tdrl.algorithm:LRSchedulerFactoryLinear",
    },
)
