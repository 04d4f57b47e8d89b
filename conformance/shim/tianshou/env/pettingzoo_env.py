"""``tianshou.env.pettingzoo_env`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.env.pettingzoo_env",
    {
        "PettingZooEnv": "tdrl.env.pettingzoo:PettingZooEnv",
    },
)
