"""An :class:`App` around a faux model and a recording console, for driving the
interactive controller without a terminal."""

from __future__ import annotations

import argparse
from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console

from heron.ai.models import ModelRegistry
from heron.ai.providers.faux import FauxProvider
from heron.cli.app_state import App
from heron.cli.tui.controller import Controller
from heron.coding.runtime import CodingSession
from heron.coding.settings import ResolvedModel, settings_from_dict
from heron.session.store import SessionStore


def recording_console(width: int = 100) -> Console:
    return Console(
        file=StringIO(), width=width, record=True, color_system=None, force_terminal=False, highlight=False, emoji=False
    )


def make_app(
    project: Path,
    home: Path,
    faux: FauxProvider,
    *,
    settings: dict[str, Any] | None = None,
    in_memory: bool = False,
    window: int = 128_000,
) -> App:
    model = faux.model(context_window=window, max_tokens=8_192)
    store = SessionStore.in_memory(project) if in_memory else SessionStore.create(project, home=home)
    parsed = settings_from_dict(settings or {})
    session = CodingSession(cwd=project, model=model, store=store, settings=parsed, home=home)
    args = argparse.Namespace(no_session=in_memory, api_key=None, base_url=None, model=None)
    return App(
        args=args,
        cwd=project,
        home=home,
        settings=parsed,
        registry=ModelRegistry.load(),
        resolved=ResolvedModel(model, None, "test"),
        session=session,
    )


def output(console: Console) -> str:
    return console.export_text(clear=True)


async def submit(controller: Controller, text: str) -> str:
    """Submit a line, wait for what it started, return what was printed."""
    await controller.submit(text)
    await controller.wait()
    return output(controller.console)
