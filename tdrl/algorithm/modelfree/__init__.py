"""tdrl.algorithm.modelfree."""
