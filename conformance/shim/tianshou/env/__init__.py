"""``tianshou.env`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.env",
    {
        "BaseVectorEnv": "tdrl.env:BaseVectorEnv",
        "DummyVectorEnv": "tdrl.env:DummyVectorEnv",
        "SubprocVectorEnv": "tdrl.env:SubprocVectorEnv",
        "ShmemVectorEnv": "tdrl.env:ShmemVectorEnv",
        "RayVectorEnv": "tdrl.env:RayVectorEnv",
        "VectorEnvWrapper": "tdrl.env:VectorEnvWrapper",
        "VectorEnvNormObs": "tdrl.env:NormObsVectorEnv",
        "ContinuousToDiscrete": "tdrl.env.discretize:DiscretizeAction",
        "MultiDiscreteToDiscrete": "tdrl.env.discretize:MultiDiscreteToDiscrete",
        "TruncatedAsTerminated": "tdrl.env.discretize:TruncatedAsTerminated",
    },
)
