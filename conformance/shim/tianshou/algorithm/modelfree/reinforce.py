"""``tianshou.algorithm.modelfree.reinforce`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.algorithm.modelfree.reinforce",
    {
        "ProbabilisticActorPolicy": "tdrl.algorithm:ProbabilisticActorPolicy",
        "DiscreteActorPolicy": "tdrl.algorithm:DiscreteActorPolicy",
        "Reinforce": "tdrl.algorithm:Reinforce",
        "ActorPolicy": "tdrl.algorithm:ActorPolicy",
    },
)
