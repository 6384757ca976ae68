"""broker package."""
