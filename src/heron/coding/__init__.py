"""The coding agent: tools, system prompt, skills, templates, settings and the runtime.

The front door for programs (docs/sdk.md): describe a session with :class:`SessionSpec`
(and :class:`StoreSpec`, :class:`ModelChoice`) and build it with :func:`assemble_session`
(:func:`resolve_spec` settles settings and model first); run a prompt with :class:`Run`
and read how it ended from its :class:`RunOutcome`. The names load on first use, so
``import heron.coding.settings`` (the ``heron`` command's argument checks) does not load
the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heron.coding.assembly import assemble_session, open_store, resolve_spec
    from heron.coding.outcome import RunOutcome
    from heron.coding.run import Run
    from heron.coding.runtime import CodingSession
    from heron.coding.session_spec import ModelChoice, ParentLink, SessionSpec, StoreSpec

_EXPORTS = {
    "SessionSpec": "heron.coding.session_spec",
    "StoreSpec": "heron.coding.session_spec",
    "ModelChoice": "heron.coding.session_spec",
    "ParentLink": "heron.coding.session_spec",
    "assemble_session": "heron.coding.assembly",
    "resolve_spec": "heron.coding.assembly",
    "open_store": "heron.coding.assembly",
    "CodingSession": "heron.coding.runtime",
    "Run": "heron.coding.run",
    "RunOutcome": "heron.coding.outcome",
}

__all__ = [
    "CodingSession",
    "ModelChoice",
    "ParentLink",
    "Run",
    "RunOutcome",
    "SessionSpec",
    "StoreSpec",
    "assemble_session",
    "open_store",
    "resolve_spec",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'heron.coding' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
