"""Speed benchmarks: tdrl against Tianshou, side by side in one process run."""
