"""RocketMQ's JSON config files under ``{storePathRootDir}/config/`` (see broker/config_files.py)."""
