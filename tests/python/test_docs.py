"""docs/PYTHON.md's quick starts and the README's example run as written (each block in a scratch folder that links the
repository's zoo/ and examples/), so that the documentation cannot drift from the package."""

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

import tandem

BLOCKS = [block for doc in (REPO / "docs" / "PYTHON.md", REPO / "README.md")
          for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)]
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(tandem.__file__)))
FRAMEWORKS = {"torch": pytest.mark.torch, "tensorflow": pytest.mark.tensorflow}


def marks(block):
    return [mark for name, mark in FRAMEWORKS.items() if f"import {name}" in block or
            f", {name}" in block.split("\n", 1)[0]]


@pytest.mark.parametrize(
    "block", [pytest.param(b, marks=marks(b), id=f"block{i}") for i, b in enumerate(BLOCKS)])
def test_quick_start_runs(block, tmp_path):
    for folder in ("zoo", "examples"):
        (tmp_path / folder).symlink_to(REPO / folder)
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": PACKAGE_PARENT, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def test_every_quick_start_is_tested():
    assert len(BLOCKS) >= 4
