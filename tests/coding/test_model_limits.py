"""The window and output limit a session plans for: flags, configuration, the server's
answer and its cache (docs/configuration.md, "What heron asks a local server"); the
calibration arithmetic (docs/context.md, "Counting tokens"); bad flags."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from heron.ai.server_window import ServerWindow
from heron.ai.types import WINDOW_ASSUMED, Model
from heron.coding import model_limits
from heron.coding.model_limits import (
    cached_window,
    probe_due,
    remember,
    remembered,
    serves_beside,
    store_window,
    with_limits,
)
from heron.context.window import calibration
from tests.cli.test_print_json_e2e import heron_command
from tests.support.http_server import LocalServer, Reply


def local(**fields: object) -> Model:
    base = {"id": "m", "api": "openai-chat", "provider": "custom", "base_url": "http://127.0.0.1:9/v1"}
    return Model(**{**base, "window_source": WINDOW_ASSUMED, "max_tokens_configured": False, **fields})  # type: ignore[arg-type]


def test_flags_win_and_an_unconfigured_output_is_a_quarter_of_the_window(tmp_path: Path) -> None:
    given = with_limits(local(), tmp_path, None, context_window=4_096, max_tokens=300)
    assert (given.context_window, given.window_source, given.max_tokens, given.max_tokens_configured) == (
        4_096,
        "--context-window",
        300,
        True,
    )
    quarter = with_limits(local(), tmp_path, None, context_window=8_000)
    assert quarter.max_tokens == 2_000 and not quarter.max_tokens_configured
    configured = with_limits(local(max_tokens=200, max_tokens_configured=True), tmp_path, None, context_window=8_000)
    assert configured.max_tokens == 200


def test_a_configured_window_never_asks_the_server(tmp_path: Path) -> None:
    model = local(window_source="", context_window=32_000)  # port 9: nothing listens, nothing is asked
    assert with_limits(model, tmp_path, None).context_window == 32_000
    assert not (tmp_path / model_limits.CACHE_FILE).exists()


def test_the_cache_is_per_server_and_model_and_expires(tmp_path: Path) -> None:
    model = local()
    store_window(tmp_path, model, 4_096, "llama.cpp /props n_ctx")
    assert cached_window(tmp_path, model) == ServerWindow(4_096, "llama.cpp /props n_ctx")
    assert cached_window(tmp_path, local(id="other")) is None
    later = json.loads((tmp_path / model_limits.CACHE_FILE).read_text())
    (entry,) = later.values()
    assert cached_window(tmp_path, model, now=entry["at"] + model_limits.CACHE_SECONDS + 1) is None


def test_the_servers_output_cap_is_cached_and_lowers_the_quarter(tmp_path: Path) -> None:
    """A server that states its own output cap (llama.cpp ``-n``: ``/props`` n_predict) is
    asked for no more; the quarter of the window still bounds a larger cap, and a flag or
    a configured ``maxTokens`` wins."""
    model = local()
    store_window(tmp_path, model, 4_096, "llama.cpp /props n_ctx, n_predict", 256)
    assert cached_window(tmp_path, model) == ServerWindow(4_096, "llama.cpp /props n_ctx, n_predict", 256)
    learned = with_limits(model, tmp_path, None)
    assert (learned.context_window, learned.max_tokens, learned.max_tokens_configured) == (4_096, 256, False)
    assert "n_predict" in learned.window_source
    assert with_limits(model, tmp_path, None, max_tokens=600).max_tokens == 600
    store_window(tmp_path, model, 4_096, "llama.cpp /props n_ctx, n_predict", 3_000)
    assert with_limits(model, tmp_path, None).max_tokens == 1_024  # a quarter of 4,096 is less


def test_calibration_samples_and_the_running_ratio() -> None:
    assert calibration.sample(500, 100) is None  # too small a request to say anything
    assert calibration.sample(100_000, 1_000) is None  # 100x: not a measurement
    assert calibration.sample(580, 1_000) == pytest.approx(0.58)
    ratio, samples = calibration.fold(None, 0.6)
    assert (ratio, samples) == (0.6, 1)
    ratio, samples = calibration.fold((ratio, samples), 0.5)
    assert ratio == pytest.approx(0.55) and samples == 2
    assert not calibration.worth_recording((0.55, 2), (0.56, 3))
    assert calibration.worth_recording((0.55, 2), (0.6, 3))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--context-window", "100"], "--context-window 100: too small"),
        (["--max-tokens", "0"], "--max-tokens 0: give a positive number"),
        (["--context-window", "4096", "--max-tokens", "4096"], "leaves no room for the prompt"),
    ],
)
def test_bad_limit_flags_are_refused_with_the_fix(tmp_path: Path, flags: list[str], message: str) -> None:
    done = subprocess.run(
        [*heron_command(), "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *flags, "-p", "hi"],
        cwd=tmp_path,
        env={"HERON_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_slots_are_cached_with_the_window_and_become_the_models(tmp_path: Path) -> None:
    model = local()
    store_window(tmp_path, model, 4_096, "llama.cpp /props n_ctx", slots=4)
    assert cached_window(tmp_path, model) == ServerWindow(4_096, "llama.cpp /props n_ctx", slots=4)
    limited = with_limits(model, tmp_path, None)
    assert limited.server_slots == 4 and not serves_beside(limited)
    assert serves_beside(local())  # a server that did not say: a background summary may run beside
    assert not serves_beside(local(server_slots=1))


def test_a_server_that_does_not_answer_in_time_is_asked_again_soon_and_said(tmp_path: Path) -> None:
    server = LocalServer(lambda request: Reply(stall="silent"), answers_probes=True)
    said: list[str] = []
    model = local(base_url=server.url + "/v1")
    try:
        limited = with_limits(model, tmp_path, None, notice=said.append)
        assert limited.context_window == model.context_window and limited.window_source == WINDOW_ASSUMED
        assert len(said) == 1 and "did not answer" in said[0] and "--context-window" in said[0], said
        asked = len(server.probes) + len(server.requests)
        cached = cached_window(tmp_path, model)
        assert cached == ServerWindow(0, model_limits.UNANSWERED)
        with_limits(model, tmp_path, None, notice=said.append)  # the next process: no probe, said again
        assert len(server.probes) + len(server.requests) == asked and len(said) == 2
        (entry,) = json.loads((tmp_path / model_limits.CACHE_FILE).read_text()).values()
        assert entry["ttl"] == model_limits.RETRY_SECONDS  # asked again after a minute, not ten
        assert cached_window(tmp_path, model, now=entry["at"] + model_limits.RETRY_SECONDS + 1) is None
    finally:
        server.close()


def test_probe_answers_are_remembered_until_they_expire(tmp_path: Path) -> None:
    model = local()
    remember(tmp_path, model, "/tokenize", "missing")
    remember(tmp_path, model, "/apply-template", "unknown", model_limits.RETRY_SECONDS)
    assert remembered(tmp_path, model, "/tokenize") == "missing"
    assert remembered(tmp_path, local(id="other"), "/tokenize") is None
    records = json.loads((tmp_path / model_limits.ANSWERS_FILE).read_text())
    at = records[f"{model.base_url} m /tokenize"]["at"]
    assert remembered(tmp_path, model, "/apply-template", now=at + model_limits.RETRY_SECONDS + 1) is None
    assert remembered(tmp_path, model, "/tokenize", now=at + model_limits.RETRY_SECONDS + 1) == "missing"
    assert remembered(tmp_path, model, "/tokenize", now=at + model_limits.CACHE_SECONDS + 1) is None


def test_a_probe_is_due_only_when_nothing_says_the_window(tmp_path: Path) -> None:
    model = local()
    assert probe_due(tmp_path, model)
    assert not probe_due(tmp_path, model, context_window=4_096)
    assert not probe_due(tmp_path, local(window_source=""))
    store_window(tmp_path, model, 0, "")
    assert not probe_due(tmp_path, model)
