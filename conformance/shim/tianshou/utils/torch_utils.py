"""``tianshou.utils.torch_utils`` -> tdrl (names only; see ``tianshou/_names.py``)."""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.torch_utils",
    {
        "policy_within_training_step": "tdrl.algorithm:within_training_step",
        "torch_train_mode": "tdrl.utils.torch_utils:torch_train_mode",
        "create_uniform_action_dist": "tdrl.utils.torch_utils:create_uniform_action_dist",
    },
)
