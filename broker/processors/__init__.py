"""broker/processors package."""
