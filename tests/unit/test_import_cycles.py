"""No import cycle is hidden in a function-level import (issue 13): a function that imports a module
which, through module-level or other function-level imports, imports the function's own module
again is a cycle in disguise. Read from the source with ``ast``; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "rocketmq_emu"
#: The import package's subpackages and the repository folders that hold them (setup.py).
FOLDERS = ("broker", "client", "namesrv", "reports")


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name."""
    out = {PACKAGE: root / PACKAGE / "__init__.py"}
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            parts = [folder, *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([PACKAGE, *parts])] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module) -> tuple[list[ast.AST], list[ast.AST]]:
    """The import statements run when the module loads, and those inside functions."""
    top: list[ast.AST] = []
    inner: list[ast.AST] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inner if in_function else top).append(child)
            elif _is_type_checking(child):
                continue  # never runs
            else:
                visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                                       | ast.Lambda))

    visit(tree, False)
    return top, inner


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> set[str]:
    """The package's modules an import statement loads (with their parent packages)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        names = [base] + [f"{base}.{alias.name}" for alias in node.names]
    out = set()
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix in known:
                out.add(prefix)
    return out


def hidden_cycles(root: Path = ROOT) -> list[str]:
    """``module: function-level import of target`` for each import whose target leads back to the
    module, through module-level or function-level imports."""
    known = _modules(root)
    graph: dict[str, set[str]] = {}
    deferred: dict[str, set[str]] = {}
    for name, path in known.items():
        top, inner = _imports(ast.parse(path.read_text(encoding="utf-8")))
        is_package = path.name == "__init__.py"
        graph[name] = set().union(*(_targets(n, name, is_package, known) for n in top))
        deferred[name] = set().union(*(_targets(n, name, is_package, known) for n in inner))

    def reach(start: str) -> set[str]:
        # Deferred edges count too: two modules importing each other inside functions are a cycle.
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            for nxt in graph.get(here, set()) | deferred.get(here, set()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def own(name: str, target: str) -> bool:
        # A package's __init__ loads before its modules, and may load them lazily (PEP 562).
        return target == name or name.startswith(target + ".") or target.startswith(name + ".")

    return sorted(f"{name}: function-level import of {target}"
                  for name, targets in deferred.items() for target in targets
                  if not own(name, target) and name in reach(target))


def test_the_scan_finds_two_modules_importing_each_other_in_functions(tmp_path):
    """Two modules that import each other only inside functions are reported, both ways."""
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "__init__.py").write_text("")
    (tmp_path / "client" / "a.py").write_text("def f():\n    from rocketmq_emu.client import b\n")
    (tmp_path / "client" / "b.py").write_text("def g():\n    import rocketmq_emu.client.a\n")
    assert hidden_cycles(tmp_path) == [
        "rocketmq_emu.client.a: function-level import of rocketmq_emu.client.b",
        "rocketmq_emu.client.b: function-level import of rocketmq_emu.client.a",
    ]


def test_no_function_level_import_hides_a_cycle():
    """No module defers an import of a module that (transitively) imports it back."""
    assert hidden_cycles() == []
