"""No two modules import each other, not even for type checking (issue 25): every import
statement counts (module level, inside functions, under ``if TYPE_CHECKING:``), since a
type-only back reference still ties two modules into one that cannot be understood or split
alone. Read from the source with ``ast``; nothing is imported.

tests/unit/test_import_cycles.py covers imports that run; this covers every import."""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_cycles import PACKAGE, ROOT
from test_import_cycles import _modules as modules

#: Cycles known and not yet undone (none: the gRPC calls, deadlines and runner name their
#: connection and factory by Protocols of their own since issue 27).
KNOWN: tuple[str, ...] = ()


def imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement names (``from a import b``: ``a`` and ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules any of its import statements names. A package and its
    own modules are no edge (a package's __init__ may load its modules lazily, PEP 562)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for dotted in imported(node, name, is_package):
                    parts = dotted.split(".")
                    targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        graph[name] = {t for t in targets & known.keys() if not (
            t == name or name.startswith(t + ".") or t.startswith(name + "."))}
    return graph


def cycles(root: Path = ROOT) -> list[list[str]]:
    """The groups of modules that import each other (directly or around a loop), each sorted:
    the strongly connected components of :func:`import_graph` with more than one module."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        # Tarjan's algorithm, iterative: the package is deep enough for Python's recursion.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / "client" / name).write_text(text)
    return tmp_path


def test_a_type_checking_import_back_is_a_cycle(tmp_path):
    """``a`` imports ``b``; ``b`` imports ``a`` only under TYPE_CHECKING: still a cycle."""
    root = _package(tmp_path, {
        "a.py": "from rocketmq_emu.client import b\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from rocketmq_emu.client.a import Thing\n",
    })
    assert cycles(root) == [["rocketmq_emu.client.a", "rocketmq_emu.client.b"]]


def test_a_loop_through_a_third_module_and_relative_imports_are_found(tmp_path):
    """a -> b -> c -> a, written with relative imports and one inside a function."""
    root = _package(tmp_path, {
        "a.py": "from . import b\n",
        "b.py": "from .c import x\n",
        "c.py": "def f():\n    from .a import y\n",
        "d.py": "from . import a\n",
    })
    assert cycles(root) == [["rocketmq_emu.client.a", "rocketmq_emu.client.b",
                             "rocketmq_emu.client.c"]]


def test_shared_types_in_a_third_module_are_no_cycle(tmp_path):
    """Both modules import a third that imports neither: no cycle (faults / faults_grpc)."""
    root = _package(tmp_path, {
        "types_.py": "X = 1\n",
        "a.py": "from rocketmq_emu.client import b, types_\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from rocketmq_emu.client.types_ import X\n",
    })
    assert cycles(root) == []


def test_no_module_imports_a_module_that_imports_it_back():
    """No group of the package's modules imports each other, counting every import statement
    (type-only ones too), apart from the known cycles of :data:`KNOWN`."""
    unexpected = [group for group in cycles()
                  if not all(m.startswith(KNOWN) for m in group)]
    assert unexpected == []
