"""Fixtures of the tests that run commands in the sandbox through heron: a directory the
sandbox must not let them write, and the sandbox required where the tests run (Linux CI
machines have bubblewrap; a missing one fails, it does not skip).

A test module uses them by importing them (``from tests.support.sandbox_fixtures import
outside, sandbox_ready``) and naming them in ``__all__``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.coding.sandbox.bwrap import availability


@pytest.fixture
def outside() -> Iterator[Path]:
    """Outside the project and the temp directory (which commands may write): the sandbox
    does not let commands write here."""
    path = Path(tempfile.mkdtemp(prefix="heron-sandbox-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sandbox_ready() -> None:
    state = availability()
    if not state.ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {state.reason}")
