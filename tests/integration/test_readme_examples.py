"""The README's and the docs/ pages' pytest examples run as written, in a project of their own,
and every relative link of those pages points at a file (and a heading) that exists.

A ```python block is a test module and runs; a ```py block is shown only (it needs a client
rocketmq-emu does not install, such as a 5.x SDK)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def pages() -> list[Path]:
    """The README and every page under docs/."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    """A page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


def defined_tests(block: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module-level test functions of a block, as pytest collects them."""
    return [node for node in ast.parse(block).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test_")]


def test_readme_has_the_examples() -> None:
    """The README shows a pytest example, and the docs pages hold more."""
    assert any(defined_tests(b) for b in python_blocks(README))
    assert sum(len(python_blocks(p)) for p in pages()[1:]) >= 3


def test_every_python_block_is_a_test() -> None:
    """A ```python block that defines no test would be shown and never run: each defines one."""
    for page in pages():
        for i, block in enumerate(python_blocks(page)):
            assert defined_tests(block), f"{page.relative_to(ROOT)} block {i} defines no test_"


def test_examples_pass(tmp_path: Path) -> None:
    """Each ```python block of the README and docs/*.md, saved as a test module, passes under
    one pytest run."""
    tests = 0
    for page in pages():
        stem = re.sub(r"\W", "_", page.stem.lower())
        for i, block in enumerate(python_blocks(page)):
            (tmp_path / f"test_{stem}_{i}.py").write_text(block)
            tests += len(defined_tests(block))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # --basetemp: the inner run's temporary directories stay in this test's (pytest would
    # otherwise number them beside the outer run's and prune the outer run's).
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--basetemp", str(tmp_path / "basetemp")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{tests} passed" in result.stdout, result.stdout


# --- links ----------------------------------------------------------------------------------
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose(text: str) -> str:
    """The page without fenced or indented code blocks and inline code spans."""
    text = _FENCE.sub("", text)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    return re.sub(r"(`+).*?\1", "", text, flags=re.S)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped (not `-`
    or `_`), spaces as `-`, a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", page.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    """The page's relative link and image targets (not http:, mailto:, ...)."""
    return [t for t in _LINK.findall(_prose(page.read_text()))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)]


def test_anchors_are_githubs() -> None:
    """The anchor rule on headings as the pages write them."""
    page = ROOT / "docs" / "admin.md"
    assert "administration-rmq-emu-admin" in anchors(page)
    assert "topic-message-types-rocketmq-5" in anchors(page)


def test_relative_links_resolve() -> None:
    """Every relative link of README.md and docs/*.md names a file that exists and, after `#`,
    a heading of that page."""
    broken = []
    count = 0
    for page in pages():
        for target in links(page):
            count += 1
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    assert count >= len(pages())  # every page links somewhere (and the regex finds links)
