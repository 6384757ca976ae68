"""broker/remoting package."""
