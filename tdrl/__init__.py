"""tdrl: Tianshou's building blocks rebuilt on TorchRL and TensorDict."""

__version__ = "0.1.0"
