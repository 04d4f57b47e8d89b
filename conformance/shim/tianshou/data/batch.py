"""``tianshou.data.batch`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.data.batch",
    {
        "Batch": "tdrl.data:Batch",
        "dist_to_atleast_2d": "tdrl.data.batch:dist_to_atleast_2d",
        "get_sliced_dist": "tdrl.data.batch:get_sliced_dist",
    },
)
