"""broker/index package."""
