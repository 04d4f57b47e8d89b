"""``tianshou.utils.net.discrete`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.net.discrete",
    {
        "DiscreteActor": "tdrl.utils.tianshou_net.discrete:DiscreteActor",
        "DiscreteCritic": "tdrl.utils.tianshou_net.discrete:DiscreteCritic",
        "FractionProposalNetwork": "tdrl.utils.tianshou_net.discrete:FractionProposalNetwork",
        "FullQuantileFunction": "tdrl.utils.tianshou_net.discrete:FullQuantileFunction",
        "ImplicitQuantileNetwork": "tdrl.utils.tianshou_net.discrete:ImplicitQuantileNetwork",
        "IntrinsicCuriosityModule": "tdrl.utils.tianshou_net.discrete:IntrinsicCuriosityModule",
        "NoisyLinear": "tdrl.utils.tianshou_net.discrete:NoisyLinear",
    },
)
