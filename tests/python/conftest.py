"""Shared fixtures of the Python package's tests: the repository, the zoo, the built package."""

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("TANDEM_ZOO", REPO / "zoo"))
# ctest sets PYTHONPATH to the build tree's package; a plain pytest run finds it in build/.
if not any(Path(p, "tandem", "__init__.py").exists() for p in sys.path if p):
    sys.path.insert(0, str(REPO / "build" / "python"))


def pytest_configure(config):
    config.addinivalue_line("markers", "tensorflow: needs tensorflow-cpu and tf2onnx")
    config.addinivalue_line("markers", "torch: needs torch (and torchvision)")


@pytest.fixture(scope="session")
def zoo():
    """The zoo's manifest entries by model name (tools/make_zoo.py)."""
    manifest = ZOO / "manifest.json"
    if not manifest.exists():
        pytest.fail(f"{manifest} is missing: run scripts/setup.sh")
    return {entry["name"]: entry for entry in json.loads(manifest.read_text())}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test writes Tandem's cache (models given as bytes, PJRT executables) in its own folder."""
    monkeypatch.setenv("TANDEM_CACHE_DIR", str(tmp_path / "cache"))
