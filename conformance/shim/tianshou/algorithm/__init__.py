"""``tianshou.algorithm`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm",
    {
        "Algorithm": "tdrl.algorithm:Algorithm",
        "PPO": "tdrl.algorithm:PPO",
    },
)
