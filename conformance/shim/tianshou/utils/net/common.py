"""``tianshou.utils.net.common`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.net.common",
    {
        "ActionReprNet": "tdrl.utils.tianshou_net.common:ActionReprNet",
        "ActionReprNetDataParallelWrapper": "tdrl.utils.tianshou_net.common:ActionReprNetDataParallelWrapper",
        "ActorCritic": "tdrl.utils.tianshou_net.common:ActorCritic",
        "BranchingNet": "tdrl.utils.tianshou_net.common:BranchingNet",
        "DataParallelNet": "tdrl.utils.tianshou_net.common:DataParallelNet",
        "EnsembleLinear": "tdrl.utils.tianshou_net.common:EnsembleLinear",
        "MLP": "tdrl.utils.tianshou_net.common:MLP",
        "ModuleWithVectorOutput": "tdrl.utils.tianshou_net.common:ModuleWithVectorOutput",
        "Net": "tdrl.utils.tianshou_net.common:Net",
        "RandomActor": "tdrl.algorithm:RandomActor",
        "Recurrent": "tdrl.utils.tianshou_net.common:Recurrent",
    },
)
