"""The session's choices as ACP shows them: heron's permission modes as session modes,
and the model as a ``model`` config option (ACP 0.12 selects models that way; heron also
answers the older ``session/set_model`` request, see :mod:`heron.cli.acp.server`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Protocol

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from heron.ai.models import ModelRegistry
from heron.coding.model_choice import resolve_model
from heron.coding.permissions.modes import MODES
from heron.coding.settings import ResolvedModel

if TYPE_CHECKING:
    from heron.ai.types import Model
    from heron.coding.control import Control
    from heron.coding.settings import Settings

MODE_TEXT = {
    "default": ("Default", "Edits inside the project run; edits outside it and sensitive reads ask"),
    "plan": ("Plan", "Read-only: edits and writing commands are refused"),
    "accept-edits": ("Accept edits", "Edits anywhere run without asking (heron's config and .git still ask)"),
    "bypass": ("Bypass permissions", "Everything runs; only deny rules apply"),
}
MAX_MODEL_OPTIONS = 60


class Chosen(Protocol):
    """What ACP shows and changes of a session's choices: the permission mode (control's),
    the model, and the settings a newly named model is resolved with."""

    @property
    def control(self) -> Control: ...

    @property
    def model(self) -> Model: ...

    @property
    def settings(self) -> Settings: ...


def modes(session: Chosen) -> SessionModeState:
    available = [SessionMode(id=m, name=MODE_TEXT[m][0], description=MODE_TEXT[m][1]) for m in MODES]
    return SessionModeState(current_mode_id=session.control.permissions.mode, available_modes=available)


def model_ref(session: Chosen) -> str:
    return f"{session.model.provider}/{session.model.id}"


def config(session: Chosen, registry: ModelRegistry) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    """The model choice: the session's model first, then the catalogue's models whose key is set."""
    current = model_ref(session)
    choices = [SessionConfigSelectOption(value=current, name=session.model.name or current)]
    for model in registry.all():
        ref = f"{model.provider}/{model.id}"
        if ref != current and len(choices) < MAX_MODEL_OPTIONS and registry.api_key(model):
            choices.append(SessionConfigSelectOption(value=ref, name=model.name or ref))
    mode_choices = [SessionConfigSelectOption(value=m, name=MODE_TEXT[m][0]) for m in MODES]
    return [
        SessionConfigOptionSelect(
            id="model", name="Model", category="model", type="select", current_value=current, options=choices
        ),
        SessionConfigOptionSelect(
            id="mode",
            name="Permission mode",
            category="mode",
            type="select",
            current_value=session.control.permissions.mode,
            options=mode_choices,
        ),
    ]


def resolve(args: argparse.Namespace, registry: ModelRegistry, session: Chosen, ref: str) -> ResolvedModel:
    """A model named by the client, found the way ``--model`` is (``--base-url`` still applies)."""
    return resolve_model(session.settings, registry, ref, args.base_url, args.api_key, getattr(args, "api", None))
