"""Data layer: Batch, replay buffers, collectors."""
