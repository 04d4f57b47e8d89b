"""``tianshou.env.gym_wrappers`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.env.gym_wrappers",
    {
        "ContinuousToDiscrete": "tdrl.env.discretize:DiscretizeAction",
        "MultiDiscreteToDiscrete": "tdrl.env.discretize:MultiDiscreteToDiscrete",
        "TruncatedAsTerminated": "tdrl.env.discretize:TruncatedAsTerminated",
    },
)
