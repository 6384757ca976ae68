"""namesrv package."""
