"""pytest plugin entry point (``pytest11``) for the rocketmq fixtures.

The fixtures arrive with the harness (client/testing.py); this module must stay importable
because pytest loads it for every run of any project that installed rocketmq-emu.
"""
