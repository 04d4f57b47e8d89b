"""tdrl.algorithm."""
