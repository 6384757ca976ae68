"""broker/schedule package."""
