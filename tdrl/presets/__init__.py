"""Preset modules, one per algorithm: plain data registered with :mod:`tdrl.registry`.

Each module defines its preset dataclass (a :class:`tdrl.registry.Preset` subclass), a
``build(preset, observation_space, action_space)`` function that imports torch and tdrl's
algorithm modules only when called, and :func:`tdrl.registry.register` calls, one per task
family it is tuned for. :mod:`tdrl.registry` imports every module here on first lookup, so
adding an algorithm's presets needs no edit elsewhere.
"""
