"""The README's pytest examples run as written, in a project of their own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_python_blocks() -> list[str]:
    """The README's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_has_the_examples() -> None:
    """The README still shows the pytest and the async example."""
    blocks = readme_python_blocks()
    assert len(blocks) >= 2
    assert any("def test_" in b for b in blocks)


def test_readme_examples_pass(tmp_path: Path) -> None:
    """Each ```python block of the README, saved as a test module, passes under pytest."""
    blocks = readme_python_blocks()
    for i, block in enumerate(blocks):
        (tmp_path / f"test_readme_{i}.py").write_text(block)
    tests = sum(block.count("\ndef test_") + block.count("\nasync def test_") for block in blocks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # --basetemp: the inner run's temporary directories stay in this test's (pytest would
    # otherwise number them beside the outer run's and prune the outer run's).
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--basetemp", str(tmp_path / "basetemp")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{tests} passed" in result.stdout
