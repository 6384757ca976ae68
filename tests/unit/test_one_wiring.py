"""One construction path: in the package, only ``broker/cluster.py`` builds brokers and name servers
(plus ``rmq-emu namesrv``'s name server alone), so the CLI and the test harness cannot drift
apart. Read from the source with ``ast``; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("broker", "client", "namesrv", "reports")
#: Who may call each constructor, by file.
ALLOWED = {"BrokerController": {"broker/cluster.py"},
           "NameServer": {"broker/cluster.py", "broker/cli.py"}}


def constructions(root: Path = ROOT) -> dict[str, set[str]]:
    """Constructor name -> the files (relative to ``root``) that call it."""
    found: dict[str, set[str]] = {name: set() for name in ALLOWED}
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                    if name in found:
                        found[name].add(path.relative_to(root).as_posix())
    return found


def test_only_the_wiring_builds_brokers_and_name_servers():
    """BrokerController(...) is called only in broker/cluster.py; NameServer(...) there and in cli."""
    found = constructions()
    assert found["BrokerController"] == {"broker/cluster.py"}
    assert found["NameServer"] <= ALLOWED["NameServer"] and "broker/cluster.py" in found["NameServer"]
