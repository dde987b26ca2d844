"""Test tiers: tests marked ``gpu`` run only where an NVIDIA GPU answers, ``torch`` only where
PyTorch imports, ``browser`` only where Chromium is installed; everything else runs on a plain
2-core CI machine."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile

import pytest


def _has_nvidia_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def _has_torch() -> bool:
    """PyTorch is installed: a module with a file, not the namespace package that a ``torch/``
    folder left behind by ``pip uninstall torch`` (bytecode written into it) imports as."""
    spec = importlib.util.find_spec("torch")
    return spec is not None and spec.origin not in (None, "namespace")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_gpu = _has_nvidia_gpu()
    has_torch = _has_torch()
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU (none found)"))
        if "torch" in item.keywords and not has_torch:
            reason = "needs PyTorch (pip install 'rigwise[torch]')"
            item.add_marker(pytest.mark.skip(reason=reason))


# Every file pytest looked at (collected, or skipped as a whole module), kept on the config for
# tests/test_collection.py.
SEEN_ATTRIBUTE = "rigwise_seen_test_files"
_CONFIGS: list[pytest.Config] = []


# The catalog's disk cache (catalog/cache.py) goes to a folder of the test run's own, removed at the
# end, so the suite leaves the user's ~/.cache as it found it (subprocesses inherit the variable).
_CACHE_ENV = "RIGWISE_CACHE_DIR"
_OWN_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    setattr(config, SEEN_ATTRIBUTE, set())
    _CONFIGS.append(config)
    if _CACHE_ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="rigwise-test-cache-")
        os.environ[_CACHE_ENV] = folder
        _OWN_CACHE.append(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _OWN_CACHE:
        folder = _OWN_CACHE.pop()
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get(_CACHE_ENV) == folder:
            del os.environ[_CACHE_ENV]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".py") and _CONFIGS:
        getattr(_CONFIGS[-1], SEEN_ATTRIBUTE).add(path)
