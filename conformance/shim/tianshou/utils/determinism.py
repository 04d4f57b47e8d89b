"""``tianshou.utils.determinism`` -> inert stand-ins (see ``tianshou/_names.py``).

Only Tianshou's determinism snapshot tests use these names, and Tianshou switches those
tests off (``AlgorithmDeterminismTest.ENABLED = False``): they construct a
``TraceDeterminismTest`` and then skip. tdrl has no trace-log snapshot tool, so the names
are :func:`~tianshou._names.inert`: constructible, and raising on any use.
"""

from tianshou._names import forwarder

__getattr__ = forwarder(
    "tianshou.utils.determinism", {}, inert_names=("TraceDeterminismTest", "TraceLoggerContext")
)
