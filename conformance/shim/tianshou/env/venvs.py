"""``tianshou.env.venvs`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.env.venvs",
    {
        "BaseVectorEnv": "tdrl.env:BaseVectorEnv",
        "DummyVectorEnv": "tdrl.env:DummyVectorEnv",
        "SubprocVectorEnv": "tdrl.env:SubprocVectorEnv",
        "ShmemVectorEnv": "tdrl.env:ShmemVectorEnv",
        "RayVectorEnv": "tdrl.env:RayVectorEnv",
    },
)
