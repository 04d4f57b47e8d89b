"""``tianshou.utils.net.continuous`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.net.continuous",
    {
        "ContinuousActorDeterministic": "tdrl.utils.tianshou_net.continuous:ContinuousActorDeterministic",
        "ContinuousActorProbabilistic": "tdrl.utils.tianshou_net.continuous:ContinuousActorProbabilistic",
        "ContinuousCritic": "tdrl.utils.tianshou_net.continuous:ContinuousCritic",
        "Perturbation": "tdrl.utils.tianshou_net.continuous:Perturbation",
        "VAE": "tdrl.utils.tianshou_net.continuous:VAE",
        "RecurrentActorProb": "tdrl.utils.tianshou_net.continuous:RecurrentActorProb",
        "RecurrentCritic": "tdrl.utils.tianshou_net.continuous:RecurrentCritic",
    },
)
