"""The interactive commands about the model: ``/model`` (a picker, a list, or a switch),
Ctrl+P's next model, and ``/thinking``. A handler object the controller holds, seeing it
only as a :class:`~heron.cli.tui.command_host.CommandHost`; the front end also asks it for
the model names ``/model`` completes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable

from rich.text import Text

from heron.ai.models import ENV_API_KEYS, ModelNotFoundError, env_api_key
from heron.ai.types import THINKING_LEVELS, Model
from heron.cli.tui.command_host import CommandHost, Handler
from heron.cli.tui.footer import format_tokens, window_label
from heron.cli.tui.pick_items import model_items
from heron.coding.settings import CUSTOM_PROVIDER, ResolvedModel, SetupError, resolve_model

MODELS_LISTED = 60


class ModelCommands:
    """``/model``, Ctrl+P and ``/thinking`` (module docstring), for a host."""

    def __init__(self, host: CommandHost) -> None:
        self.host = host

    def commands(self) -> dict[str, Handler]:
        return {"model": self._cmd_model, "thinking": self._cmd_thinking}

    def available_models(self) -> list[Model]:
        """Models of the current provider, of providers with a key in the environment,
        and of providers that need none (local servers from models.json)."""
        current = self.host.session.model
        out = [current]
        for model in self.host.app.registry.all():
            if (model.provider, model.id) == (current.provider, current.id):
                continue
            if model.provider == current.provider or model.provider not in ENV_API_KEYS or env_api_key(model.provider):
                out.append(model)
        return out

    def cycle_model(self) -> None:
        """Ctrl+P: the next of :meth:`available_models` (those with a key, or needing none)."""
        models = self.available_models()
        if len(models) < 2:
            self.host.note("no other model to switch to (/model lists them)")
            return
        current = self.host.session.model
        refs = [m.ref for m in models]
        following = models[(refs.index(current.ref) + 1) % len(models)] if current.ref in refs else models[0]
        self._cmd_model(following.ref)

    def resolve(self, ref: str) -> ResolvedModel:
        """A model for ``/model ref``, with its API key. An id the catalogue lacks, while
        the current model is a ``--base-url`` one, is taken as another model of that server."""
        app = self.host.app
        current = self.host.session.model
        cli_key = getattr(app.args, "api_key", None)
        try:
            model = app.registry.find(ref)
        except ModelNotFoundError:
            if current.provider == CUSTOM_PROVIDER and current.base_url:
                # "custom/other-model" names the server's model "other-model": the
                # provider prefix is heron's, the server never knew it
                prefix = f"{CUSTOM_PROVIDER}/"
                model_id = ref[len(prefix) :] if ref.startswith(prefix) else ref
                custom = dataclasses.replace(current, id=model_id, name=model_id)
                return ResolvedModel(custom, self.host.session.api_key, "/model", app.resolved.key_source)
            raise
        key = cli_key if cli_key and model.provider == current.provider else None
        return resolve_model(app.settings, app.registry, model.ref, None, key)

    async def _pick_model(self) -> None:
        picker = self.host.picker
        assert picker is not None
        s = self.host.session
        ref = await picker(f"model (now {s.model.ref})", model_items(self.available_models(), s.model))
        if ref is not None:
            self._cmd_model(ref)

    def _cmd_model(self, args: str) -> Awaitable[None] | None:
        s = self.host.session
        ref = args.strip()
        if not ref and self.host.picker is not None:
            return self._pick_model()
        if not ref:
            self._list_models()
            return None
        try:
            resolved = self.resolve(ref)
        except SetupError as exc:
            self.host.error(str(exc))
            return None
        s.set_model(resolved.model, resolved.api_key)
        self.host.app.resolved = resolved  # what a refused key is explained from
        self.host.note(f"model: {s.model.ref} (window {window_label(s.window, s.model.context_window)})", "green")
        return None

    def _list_models(self) -> None:
        """``/model`` without a picker: the models, the current one starred."""
        s = self.host.session
        show = self.host.print_text
        models = self.available_models()
        self.host.renderer.reset_section()
        show(Text(f"model: {s.model.ref} (window {window_label(s.window, s.model.context_window)})", style="bold"))
        for model in models[:MODELS_LISTED]:
            mark = "*" if model is s.model or (model.provider, model.id) == (s.model.provider, s.model.id) else " "
            extra = " reasoning" if model.reasoning else ""
            show(Text(f" {mark} {model.ref}  ({format_tokens(model.context_window)}{extra})"))
        if len(models) > MODELS_LISTED:
            show(Text(f"   … {len(models) - MODELS_LISTED} more (Tab completes /model names)", style="dim"))
        show(Text("switch with /model provider/id", style="dim"))

    def _cmd_thinking(self, args: str) -> None:
        s = self.host.session
        level = args.strip().lower()
        if not level:
            self.host.note(f"thinking: {s.thinking_level} (levels: {', '.join(THINKING_LEVELS)})", "")
            return
        chosen = next((known for known in THINKING_LEVELS if known == level), None)
        if chosen is None:
            self.host.error(f"unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}")
            return
        s.set_thinking_level(chosen)
        hint = "" if s.model.reasoning or level == "off" else " (this model does not declare reasoning support)"
        self.host.note(f"thinking: {level}{hint}", "green")
