"""broker/consumequeue package."""
