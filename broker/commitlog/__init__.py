"""broker/commitlog package."""
