"""Whether the context rules are checked, and how strictly: ``HERON_CHECK_CONTEXT`` or the
``context.checkInvariants`` setting.

Apart from the rules themselves (:mod:`heron.context.rules.invariants`) so that a run which
does not check them reads this switch without loading them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

CheckMode = Literal["off", "warn", "strict"]
ENV_VAR = "HERON_CHECK_CONTEXT"


def mode_from(setting: bool, environ: Mapping[str, str] | None = None) -> CheckMode:
    """``HERON_CHECK_CONTEXT``: ``strict`` (tests), ``1``/``warn``/``true`` (warn); else the setting."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "").strip().lower()
    if value == "strict":
        return "strict"
    if value in ("1", "true", "yes", "warn", "on"):
        return "warn"
    if value in ("0", "false", "no", "off"):
        return "off"
    return "warn" if setting else "off"
