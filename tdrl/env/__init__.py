"""tdrl.env."""
