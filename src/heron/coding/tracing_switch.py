"""Whether a run wants traces (docs/tracing.md): the one check the start of every run makes,
kept apart from ``tracing.py`` so a run without traces never imports the tracing code."""

from __future__ import annotations

import os

ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_mode(otel_flag: str | None) -> str | None:
    """``"console"`` or ``"otlp"`` when traces are wanted, else None (nothing imported)."""
    if otel_flag:
        return otel_flag
    if any(os.environ.get(name) for name in ENDPOINT_ENVS):
        return "otlp"
    return None
