"""Every byte layout is declared once, with construct, in the module that owns it: the rest of
broker/, client/ and reports/ takes its structs, offsets and sizes from there
(rocketmq_emu.broker.layout derives them), never types a struct format or a layout's offset again.
"""

from __future__ import annotations

import ast
import importlib
import re
import struct
from pathlib import Path

import pytest

from rocketmq_emu.broker.layout import Layout

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("broker", "client", "reports")

#: The modules that declare layouts (construct), and so may name their own numbers.
DECLARING = {
    "broker/commitlog/record.py": "rocketmq_emu.broker.commitlog.record",
    "broker/commitlog/checkpoint.py": "rocketmq_emu.broker.commitlog.checkpoint",
    "broker/consumequeue/unit.py": "rocketmq_emu.broker.consumequeue.unit",
    "broker/index/index_file.py": "rocketmq_emu.broker.index.index_file",
    "broker/message.py": "rocketmq_emu.broker.message",
    "broker/processors/batch_codec.py": "rocketmq_emu.broker.processors.batch_codec",
    "broker/schedule/checkpoint.py": "rocketmq_emu.broker.schedule.checkpoint",
    "broker/schedule/dispatch_log.py": "rocketmq_emu.broker.schedule.dispatch_log",
    "broker/schedule/schedule_log.py": "rocketmq_emu.broker.schedule.schedule_log",
}

#: Files still typing formats or offsets themselves, each with why; the owner removes the
#: entry when migrating (the declaring module's public names to use are in the reason).
ALLOWLIST: dict[str, str] = {}

_FORMAT = re.compile(r"^[@=<>!](\d*[xcbB?hHiIlLqQnNefdspP])+$")
#: Format codes inside a larger expression (``">" + "iq"``, ``f"iiq{n}s"``).
_CODES = re.compile(r"^[@=<>!]?(\d*[xcbB?hHiIlLqQnNefdspP])+$")
_CODES_RUN = re.compile(r"^(\d*[xcbB?hHiIlLqQnNefdspP]){4,}$")
_STRUCT_CALLS = {"Struct", "pack", "unpack", "unpack_from", "pack_into", "iter_unpack", "calcsize"}
#: Offsets and sizes below this are every int's and long's (4, 8): too common to attribute;
#: from the upper bound on they are paddings to a page (the checkpoint's 4096), not offsets.
#: Powers of two (16, 32, 64) are left out too: buffer sizes and slices use them everywhere.
_MIN_DISTINCTIVE = 12
_MAX_DISTINCTIVE = 1024
_NAMED_NUMBER = re.compile(r"(_AT|_SIZE|_LEN|_LENGTH|_POSITION)$")


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"), rel)))
    return out


def _layouts(module) -> list[Layout]:
    found = []
    for value in vars(module).values():
        if isinstance(value, Layout):
            found.append(value)
        elif isinstance(value, dict):
            found.extend(v for v in value.values() if isinstance(v, Layout))
    return found


def _layout_numbers() -> dict[int, set[str]]:
    """Distinctive offsets and sizes of every declared layout -> the modules declaring one."""
    numbers: dict[int, set[str]] = {}
    for rel, name in DECLARING.items():
        module = importlib.import_module(name)
        for layout in _layouts(module):
            values = {layout.fixed_size, layout.min_size}
            values |= {f.offset for f in layout.fields if f.offset is not None}
            values |= {f.offset + f.size for f in layout.fields if f.offset is not None}
            for v in values:
                if _MIN_DISTINCTIVE <= v < _MAX_DISTINCTIVE:
                    numbers.setdefault(v, set()).add(rel)
        for value in vars(module).values():
            if isinstance(value, struct.Struct) and \
                    _MIN_DISTINCTIVE <= value.size < _MAX_DISTINCTIVE:
                numbers.setdefault(value.size, set()).add(rel)
    return numbers


def _format_literals(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of each struct format typed in the source."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _FORMAT.match(node.value):
            hits.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and _CODES_RUN.match(str(part.value)):
                    hits.append((node.lineno, f"f-string part {part.value!r}"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(
                func.value, ast.Name) else ""
            if owner == "struct" and name in _STRUCT_CALLS and node.args:
                # Derived codes joined with lengths (f"{V4_CODES}{n}s") are fine; typed codes
                # ("iq", ">" "q") are not. f-string parts are Constants too.
                typed = [n for n in ast.walk(node.args[0]) if isinstance(n, ast.Constant)
                         and isinstance(n.value, str) and _CODES.match(n.value)
                         and not re.fullmatch(r"[sx]", n.value)]
                if typed:
                    hits.append((node.lineno, f"struct.{name} with a literal format"))
    return hits


def _foreign(numbers: dict[int, set[str]], rel: str) -> dict[int, str]:
    """The layout numbers ``rel`` does not declare itself -> a module that does."""
    return {v: min(mods) for v, mods in numbers.items() if rel not in mods and v & (v - 1)}


def _number_literals(tree: ast.Module, numbers: dict[int, str]) -> list[tuple[int, int]]:
    """(line, value) of layout offsets/sizes typed as ``x + N`` / ``x - N`` or ``NAME_AT = N``."""
    hits = []

    def known(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value in numbers:
            return node.value
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            for side in (node.left, node.right):
                value = known(side)
                if value is not None:
                    hits.append((node.lineno, value))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            value = known(node.value)
            if value is not None and isinstance(target, ast.Name) and _NAMED_NUMBER.search(target.id):
                hits.append((node.lineno, value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "unpack_from" and len(node.args) >= 2:
            value = known(node.args[1])
            if value is not None:
                hits.append((node.lineno, value))
    return hits


SOURCES = _sources()


def test_scan_sees_the_declaring_modules():
    """The scan covers broker/, client/, reports/ including every declaring module."""
    scanned = {rel for rel, _ in SOURCES}
    assert set(DECLARING) <= scanned and "broker/layout.py" in scanned


def test_allowlist_names_only_files_that_exist():
    """Every allowlist entry is a scanned file (a deleted file's entry goes too)."""
    assert set(ALLOWLIST) <= {rel for rel, _ in SOURCES}


@pytest.mark.parametrize("rel, tree", SOURCES, ids=[rel for rel, _ in SOURCES])
def test_no_struct_format_is_typed_outside_a_declaration(rel, tree):
    """No struct format literal: every format is derived from a construct declaration."""
    if rel in ALLOWLIST:
        pytest.skip(f"allowlisted: {ALLOWLIST[rel]}")
    assert _format_literals(tree) == []


@pytest.mark.parametrize("rel, tree", SOURCES, ids=[rel for rel, _ in SOURCES])
def test_no_layout_offset_or_size_is_typed_outside_its_module(rel, tree):
    """No known layout offset or size typed as a number outside the module declaring it."""
    if rel in ALLOWLIST:
        pytest.skip(f"allowlisted: {ALLOWLIST[rel]}")
    foreign = _foreign(_layout_numbers(), rel)
    hits = [(line, v, foreign[v]) for line, v in _number_literals(tree, foreign)]
    assert hits == [], "use the declaring module's names instead"


def test_allowlisted_files_still_need_their_entry():
    """An allowlist entry is removed once its file types no format and no layout number."""
    numbers = _layout_numbers()
    clean = [rel for rel, tree in SOURCES if rel in ALLOWLIST
             and not _format_literals(tree)
             and not _number_literals(tree, _foreign(numbers, rel))]
    assert clean == []
