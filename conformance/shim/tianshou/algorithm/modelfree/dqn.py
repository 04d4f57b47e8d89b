"""``tianshou.algorithm.modelfree.dqn`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.dqn",
    {
        "DQN": "tdrl.algorithm:DQN",
        "DiscreteQLearningPolicy": "tdrl.algorithm:DiscreteQLearningPolicy",
    },
)
