"""``--resume`` resolves the spec twice - once before the picker (so it asks only when the
settings and model work), once with the picked session - and used to silence the second:
a warning only the picked session gives (its own server's window probe, its model) was
lost. Now each warning is shown once, whichever resolve says it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from heron.cli import app
from heron.coding import assembly
from heron.coding.session_spec import ModelChoice, SessionSpec, StoreSpec
from heron.coding.settings import SetupError


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(model=None, base_url=None, **given)


def _resolving(said: list[list[str]], fail_first: bool = False):  # type: ignore[no-untyped-def]
    """A stand-in for the assembly's resolve: the nth call warns ``said[n]``."""
    calls: list[SessionSpec] = []

    def resolve(spec: SessionSpec, warn):  # type: ignore[no-untyped-def]
        calls.append(spec)
        for text in said[len(calls) - 1]:
            warn(text)
        if fail_first and len(calls) == 1:
            raise SetupError("no model configured")
        return spec

    return resolve, calls


def test_what_only_the_picked_session_says_is_shown_and_nothing_twice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    resolve, calls = _resolving(
        [["settings: unknown key 'x'"], ["settings: unknown key 'x'", "window probe: no answer"]]
    )
    monkeypatch.setattr(assembly, "resolve_spec", resolve)
    monkeypatch.setattr(app, "store_spec", lambda args, cwd, home: StoreSpec.memory())
    spec = SessionSpec(cwd=tmp_path, model=ModelChoice())
    app._resume_spec(_args(), spec, tmp_path, tmp_path)
    err = capsys.readouterr().err
    assert err.count("unknown key 'x'") == 1
    assert err.count("window probe: no answer") == 1
    assert len(calls) == 2 and calls[1] == dataclasses.replace(spec, store=StoreSpec.memory())


def test_a_first_resolve_that_fails_without_model_flags_still_warns_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No model anywhere but in the session to be picked: the first resolve fails, the pick
    goes on, and the picked session's warnings are shown."""
    resolve, _calls = _resolving([["no model"], ["the session's server: ollama"]], fail_first=True)
    monkeypatch.setattr(assembly, "resolve_spec", resolve)
    monkeypatch.setattr(app, "store_spec", lambda args, cwd, home: StoreSpec.memory())
    app._resume_spec(_args(), SessionSpec(cwd=tmp_path, model=ModelChoice()), tmp_path, tmp_path)
    err = capsys.readouterr().err
    assert err.count("no model") == 1 and err.count("the session's server: ollama") == 1
