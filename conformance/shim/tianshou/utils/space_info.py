"""``tianshou.utils.space_info`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.space_info",
    {
        "SpaceInfo": "tdrl.utils.space_info:SpaceInfo",
        "ActionSpaceInfo": "tdrl.utils.space_info:ActionSpaceInfo",
        "ObservationSpaceInfo": "tdrl.utils.space_info:ObservationSpaceInfo",
    },
)
