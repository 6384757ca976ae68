"""rocketmq-emu: a RocketMQ-compatible broker and name server.

The installed import package. Its subpackages live in the repository's top-level folders
(``broker/``, ``namesrv/``, ``client/``, ``reports/``; see ``setup.py``'s ``package_dir``), so
user code that has its own ``client`` or ``broker`` module never shadows them.
"""
