"""tdrl.trainer."""
