"""Shared fixtures: compile a topology into a temporary platform file."""

from __future__ import annotations

import pytest

from hcsim.platform import compile_platform


@pytest.fixture
def compiled(tmp_path):
    """compiled(topology, **kw) -> path of the platform XML."""
    counter = iter(range(10**6))

    def _compile(topology, **kwargs):
        path = tmp_path / f"platform{next(counter)}.xml"
        compile_platform(topology, path, **kwargs)
        return str(path)

    return _compile
