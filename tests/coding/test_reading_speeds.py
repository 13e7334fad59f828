"""The prompt-reading speeds heron keeps for local servers (heron.coding.reading_speeds)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from heron.ai.reading import ReadingSample
from heron.ai.types import Model
from heron.coding.reading_speeds import CACHE_FILE, KEEP_SAMPLES, MAX_AGE_SECONDS, measured_speed, record_sample
from heron.coding.settings import load_settings

NOW = 1_800_000_000.0


def model(base: str = "http://user:secret@127.0.0.1:8080/v1") -> Model:
    return Model(id="cpu", api="openai-chat", provider="local", base_url=base)


def test_the_slowest_recent_sample_is_the_speed_and_no_credential_is_kept(tmp_path: Path) -> None:
    assert measured_speed(tmp_path, model(), NOW) is None
    record_sample(tmp_path, model(), ReadingSample(1_000, 10.0), NOW)  # 100 a second
    record_sample(tmp_path, model(), ReadingSample(3_000, 10.0), NOW)  # 300 a second
    assert measured_speed(tmp_path, model(), NOW) == 100
    path = tmp_path / CACHE_FILE
    text = path.read_text()
    assert "secret" not in text and "user" not in text
    assert "http://127.0.0.1:8080/v1 cpu" in json.loads(text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # another model on the same server has no speed of its own yet
    other = Model(id="other", api="openai-chat", provider="local", base_url="http://127.0.0.1:8080/v1")
    assert measured_speed(tmp_path, other, NOW) is None


def test_old_and_surplus_samples_go(tmp_path: Path) -> None:
    record_sample(tmp_path, model(), ReadingSample(100, 10.0), NOW - MAX_AGE_SECONDS - 1)  # 10 a second, too old
    assert measured_speed(tmp_path, model(), NOW) is None
    for n in range(KEEP_SAMPLES + 3):
        record_sample(tmp_path, model(), ReadingSample(1_000 * (n + 1), 10.0), NOW)
    # the oldest (slowest) ones were dropped: the slowest kept is the fourth
    assert measured_speed(tmp_path, model(), NOW) == 400


def test_a_damaged_file_costs_only_the_measurement(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert measured_speed(tmp_path, model(), NOW) is None
    path.write_text(json.dumps({"http://127.0.0.1:8080/v1 cpu": [["x", 1, NOW], [5, 0, NOW], [50, 1, NOW]]}))
    assert measured_speed(tmp_path, model(), NOW) == 50  # only the well-formed sample counts
    record_sample(tmp_path, model(), ReadingSample(400, 2.0), NOW)
    assert measured_speed(tmp_path, model(), NOW) == 50


def test_the_assumed_speed_setting_is_checked(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    cwd.mkdir()
    assert load_settings(cwd, home).timeouts.reading_tokens_per_second == 20
    (home / "settings.json").write_text(json.dumps({"timeouts": {"readingTokensPerSecond": 5}}))
    assert load_settings(cwd, home).timeouts.reading_tokens_per_second == 5
    (home / "settings.json").write_text(json.dumps({"timeouts": {"readingTokensPerSecond": 0}}))
    bad = load_settings(cwd, home)
    assert bad.timeouts.reading_tokens_per_second == 20  # refused, with a warning naming it
    assert any("timeouts.readingTokensPerSecond" in w and ">= 1" in w for w in bad.warnings), bad.warnings
