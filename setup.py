"""Build script: the metadata lives in setup.cfg; this file declares the package layout and the C
accelerators.

Both extensions are optional: where they cannot be compiled, the install still succeeds and the
pure-Python paths (identical bytes, slower) serve every request. ``broker/_native/__init__.py``
says which is in use; ``RMQ_EMU_NO_NATIVE=1`` forces the Python paths.
"""

from setuptools import Extension, find_packages, setup

# The repository keeps the design card's top-level folders (broker/, namesrv/, client/, reports/);
# installed, they are subpackages of one import package, ``rocketmq_emu``, so they never collide
# with a user's own ``client.py`` or ``broker.py``. ``rocketmq_emu/`` holds only the package root.
_FOLDERS = ["broker", "namesrv", "client", "reports"]
_PACKAGE_DIR = {"rocketmq_emu": "rocketmq_emu"} | {f"rocketmq_emu.{f}": f for f in _FOLDERS}
_PACKAGES = ["rocketmq_emu"] + [
    f"rocketmq_emu.{pkg}"
    for pkg in find_packages(include=[name for f in _FOLDERS for name in (f, f"{f}.*")])]

_CFLAGS = ["-O2", "-std=c11", "-Wall", "-Wno-unused-function"]

# One job per file (see each file's head comment): put.c is the check-then-write sequence,
# the headers next to it the helpers it inlines.
_STORE_SOURCES = ["put", "put_record", "put_direct", "putpath_type", "store_attrs", "store_names",
                  "store_module", "index", "index_run"]
_STORE_HEADERS = ["putpath", "put_core", "put_state", "put_publish", "put_props", "put_scratch",
                  "store_attrs", "store_names", "store_numbers", "store_direct", "index",
                  "index_columns", "index_entries"]
_SEND_SOURCES = ["send_frame", "send_type", "send_module"]
_SEND_HEADERS = ["send", "send_json", "send_out", "send_record", "send_run", "send_direct",
                 "store_direct"]

setup(
    package_dir=_PACKAGE_DIR,
    packages=_PACKAGES,
    ext_modules=[
        # The store's put path (a record into the commitlog mmap, its consume-queue unit) and
        # the index batch (key hashes, entries and hash slots).
        Extension("rocketmq_emu.broker._native._store",
                  [f"broker/_native/{name}.c" for name in _STORE_SOURCES],
                  depends=[f"broker/_native/{name}.h" for name in _STORE_HEADERS],
                  extra_compile_args=_CFLAGS, optional=True),
        # The fused SEND_MESSAGE_V2 path: frames and JSON headers cut and checked in C.
        Extension("rocketmq_emu.broker._native._send",
                  [f"broker/_native/{name}.c" for name in _SEND_SOURCES],
                  depends=[f"broker/_native/{name}.h" for name in _SEND_HEADERS],
                  extra_compile_args=_CFLAGS, optional=True),
    ],
)
