from __future__ import annotations

from collections.abc import Iterator

import pytest

from heron.ai.providers.faux import FauxProvider
from heron.ai.registry import unregister_provider
from tests.support.http_server import LocalServer


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    server = LocalServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = FauxProvider.install("faux")
    try:
        yield provider
    finally:
        unregister_provider("faux")
