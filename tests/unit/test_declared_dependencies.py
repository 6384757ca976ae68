"""Every third-party import of the installed packages is declared by the extra it belongs to."""

from __future__ import annotations

import ast
import configparser
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Which requirement groups of setup.cfg each installed folder may import from. The client's
#: pytest plugin runs only under pytest (and its greenlet wait only under pytest-twisted);
#: record_scan's vectorized columns serve only the reports.
ALLOWED = {
    "broker": ("install_requires",),
    "namesrv": ("install_requires",),
    "client": ("install_requires", "test"),
    "reports": ("install_requires", "reports"),
    "broker/commitlog/record_scan.py": ("install_requires", "reports"),
    # TLS: imported only when tls.* keys are set (the [tls] extra)
    "broker/tls/context.py": ("install_requires", "tls"),
    "broker/tls/certs.py": ("install_requires", "tls"),
    # rmq-emu tls-cert: tells a CA-issued certificate apart when cryptography is there
    "broker/tls/cli.py": ("install_requires", "tls"),
}


def requirement_names(lines: str) -> set[str]:
    """Canonical distribution names of a setup.cfg requirement list."""
    names = set()
    for line in lines.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(re.split(r"[\[<>=!~;\s]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def declared_groups() -> dict[str, set[str]]:
    """install_requires and each extra of setup.cfg (direct requirements only: a module that
    imports a dependency's dependency must declare it itself)."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    groups = {"install_requires": requirement_names(cfg["options"]["install_requires"])}
    for extra, lines in cfg["options.extras_require"].items():
        groups[extra] = requirement_names(lines)
    return groups


def third_party_imports(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports that are neither stdlib nor ours."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "rocketmq_emu"}


def test_every_import_is_declared() -> None:
    """No installed module imports a package its extra does not declare."""
    groups = declared_groups()
    dists_of = packages_distributions()
    missing = []
    for folder in ("broker", "namesrv", "client", "reports"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            allowed = set().union(*(groups[g] for g in ALLOWED.get(rel, ALLOWED[folder])))
            for name in third_party_imports(path):
                dists = {d.lower().replace("_", "-") for d in dists_of.get(name, [name])}
                if not dists & allowed:
                    missing.append(f"{rel}: {name}")
    assert missing == []
