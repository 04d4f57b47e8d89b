"""``tianshou.data.utils.converter`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.data.utils.converter",
    {
        "to_hdf5": "tdrl.data:to_hdf5",
        "from_hdf5": "tdrl.data:from_hdf5",
        "to_numpy": "tdrl.data:to_numpy",
        "to_torch": "tdrl.data:to_torch",
    },
)
