"""Shared fixtures: compile topologies into platform files, once per session where they repeat."""

from __future__ import annotations

import hashlib

import pytest

from hcsim.platform import compile_platform, cxl_system, noncoherent_system


@pytest.fixture
def compiled(tmp_path):
    """compiled(topology, **kw) -> path of the platform XML (a fresh file every call)."""
    counter = iter(range(10**6))

    def _compile(topology, **kwargs):
        path = tmp_path / f"platform{next(counter)}.xml"
        compile_platform(topology, path, **kwargs)
        return str(path)

    return _compile


def _fingerprint(topology, kwargs) -> str:
    """Equal topologies (same graph, nodes, links and attributes) get the same fingerprint."""
    content = (
        sorted(topology.graph.items()),
        sorted(topology.nodes(data=True)),
        sorted(topology.edges(data=True)),
        sorted(kwargs.items()),
    )
    return hashlib.sha256(repr(content).encode()).hexdigest()


@pytest.fixture(scope="session")
def compile_cached(tmp_path_factory):
    """compile_cached(topology, **kw) -> path; a topology equal to one compiled before reuses its file.

    Tests must not edit the files. Equality is by content, so a folded system and the
    full one, or the same system built twice, are told apart or shared correctly.
    """
    root = tmp_path_factory.mktemp("platforms")
    cache: dict[str, str] = {}

    def _compile(topology, **kwargs):
        key = _fingerprint(topology, kwargs)
        path = cache.get(key)
        if path is None:
            path = cache[key] = str(root / f"{key[:16]}.xml")
            compile_platform(topology, path, **kwargs)
        return path

    return _compile


@pytest.fixture(scope="session")
def paper_system(compile_cached):
    """paper_system("cxl"|"noncoherent", xpus, **kw) -> (topology, platform path), built once a session.

    The topology is shared between tests: read it, never change it.
    """
    builders = {"cxl": cxl_system, "noncoherent": noncoherent_system}
    cache: dict[tuple, tuple] = {}

    def _get(system: str, xpus: int, **kwargs):
        key = (system, xpus, tuple(sorted(kwargs.items())))
        if key not in cache:
            topology = builders[system](xpus, **kwargs)
            cache[key] = (topology, compile_cached(topology))
        return cache[key]

    return _get
