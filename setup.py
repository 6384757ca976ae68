"""Build script: the metadata lives in setup.cfg; this file declares the package layout (pure
Python: no compiled extension)."""

from setuptools import find_packages, setup

# The repository keeps the design card's top-level folders (broker/, namesrv/, client/, reports/);
# installed, they are subpackages of one import package, ``rocketmq_emu``, so they never collide
# with a user's own ``client.py`` or ``broker.py``. ``rocketmq_emu/`` holds only the package root.
_FOLDERS = ["broker", "namesrv", "client", "reports"]
_PACKAGE_DIR = {"rocketmq_emu": "rocketmq_emu"} | {f"rocketmq_emu.{f}": f for f in _FOLDERS}
_PACKAGES = ["rocketmq_emu"] + [
    f"rocketmq_emu.{pkg}"
    for pkg in find_packages(include=[name for f in _FOLDERS for name in (f, f"{f}.*")])]

setup(
    package_dir=_PACKAGE_DIR,
    packages=_PACKAGES,
)
