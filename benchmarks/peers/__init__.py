"""The peers of :mod:`benchmarks.bench_peers`: one small module per library.

* :mod:`benchmarks.peers.core`: the rows (algorithm, task, budget), the evaluation log that
  keeps test episodes out of the timed training, and the one-thread checks;
* :mod:`benchmarks.peers.alignment`: where each peer's defaults differ from tdrl's presets
  and how they were aligned (printed by the benchmark, checked by its tests);
* :mod:`benchmarks.peers.table`: medians, ratios and the README table (pure Python);
* one runner per library: :mod:`~benchmarks.peers.tdrl_peer`,
  :mod:`~benchmarks.peers.tianshou_peer`, :mod:`~benchmarks.peers.sb3_peer` (SB3 and SBX)
  and :mod:`~benchmarks.peers.torchrl_peer`. Each imports its library only when it runs.
"""
