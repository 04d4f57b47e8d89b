"""``tianshou.utils`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils",
    {
        "MovAvg": "tdrl.utils.stats:MovAvg",
        "RunningMeanStd": "tdrl.utils.stats:RunningMeanStd",
        "TensorboardLogger": "tdrl.utils.logger:TensorboardLogger",
        "LazyLogger": "tdrl.utils.logger:LazyLogger",
        "WandbLogger": "tdrl.utils.logger:WandbLogger",
    },
)
