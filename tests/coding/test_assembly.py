"""The one assembly of a session: a SessionSpec in, a CodingSession out (docs/sdk.md)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import TextContent, UserMessage
from heron.coding import SessionSpec as ExportedSpec
from heron.coding import assemble_session as exported_assemble
from heron.coding.assembly import assemble_session, resolve_spec
from heron.coding.model_choice import SetupError
from heron.coding.session_spec import ModelChoice, SessionSpec, StoreSpec, tool_names
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore

SRC = Path(__file__).resolve().parents[2] / "src" / "heron"


def test_only_the_assembly_constructs_a_coding_session() -> None:
    """Every mode, batch task and sub-agent goes through assemble_session: a second place
    that builds a CodingSession would choose settings, trust or the store its own way."""
    sites = []
    for path in sorted(SRC.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"(?<![\w.])CodingSession\(", line) and not line.lstrip().startswith("class "):
                sites.append(f"{path.relative_to(SRC).as_posix()}:{number}")
    assert sites and all(site.startswith("coding/assembly.py:") for site in sites), sites


def test_the_front_door_is_exported_from_heron_coding() -> None:
    assert ExportedSpec is SessionSpec and exported_assemble is assemble_session


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


async def test_a_spec_with_a_new_store_records_the_run(project: Path, home: Path, faux: FauxProvider) -> None:
    spec = SessionSpec(cwd=project, model=faux.model(), store=StoreSpec.new(project / "s.jsonl"))
    session = assemble_session(spec)
    assert session.home == home and session.settings.sources == ()
    assert "task" in [t.name for t in session.tools] and session.subagents is not None
    faux.queue(text("hello"))
    await session.prompt("hi")
    lines = [json.loads(line) for line in (project / "s.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[-1]["message"]["content"][0]["text"] == "hello"


def test_tools_without_task_have_no_sub_agents(project: Path, faux: FauxProvider) -> None:
    session = assemble_session(SessionSpec(cwd=project, model=faux.model(), tools=tool_names("read,grep")))
    assert [t.name for t in session.tools] == ["read", "grep"] and session.subagents is None
    assert session.store.path is None  # the default store: memory


def test_a_seeded_fork_starts_from_the_source_path(project: Path, home: Path, faux: FauxProvider) -> None:
    source = SessionStore.create(project, home=home)
    first = source.append_message(UserMessage(content=[TextContent(text="one")])).id
    source.append_message(UserMessage(content=[TextContent(text="two")]))
    seed = UserMessage(content=[TextContent(text="seeded")])
    spec = SessionSpec(cwd=project, model=faux.model(), store=StoreSpec.fork(source, first).seeded(seed))
    session = assemble_session(spec)
    assert [m.text() for m in session.messages] == ["one", "seeded"]  # type: ignore[union-attr]


def test_a_bad_allow_rule_and_a_bad_mode_are_refused(project: Path, faux: FauxProvider) -> None:
    with pytest.raises(ValueError):
        assemble_session(SessionSpec(cwd=project, model=faux.model(), allow=("Bash(",)))
    with pytest.raises(ValueError):
        assemble_session(SessionSpec(cwd=project, model=faux.model(), permission_mode="sometimes"))


def test_an_open_store_needs_a_reference(project: Path, faux: FauxProvider) -> None:
    with pytest.raises(ValueError, match="needs a path or a session id"):
        assemble_session(SessionSpec(cwd=project, model=faux.model(), store=StoreSpec("open")))


def test_a_model_choice_is_resolved_once_with_the_settings_warnings(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "settings.json").write_text('{"noSuchSetting": 1}')
    monkeypatch.setenv("HERON_API_KEY", "sk-local")
    warnings: list[str] = []
    choice = ModelChoice("local-model", "http://127.0.0.1:9/v1")
    spec = resolve_spec(SessionSpec(cwd=project, model=choice), warnings.append)
    assert spec.resolved.model.id == "local-model" and spec.resolved.api_key == "sk-local"
    assert spec.settings is not None and len(warnings) == 1 and "noSuchSetting" in warnings[0]
    assert resolve_spec(spec, warnings.append) == spec and len(warnings) == 1  # settled: nothing redone


def test_a_model_choice_that_cannot_resolve_is_a_setup_error(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "HERON_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SetupError):
        resolve_spec(SessionSpec(cwd=project, model=ModelChoice()))


def test_a_spec_of_a_bare_model_is_resolved_as_given(project: Path, faux: FauxProvider) -> None:
    spec = SessionSpec(cwd=project, model=faux.model(), api_key="k", settings=settings_from_dict({}))
    assert spec.resolved.api_key == "k" and spec.resolved.reason == "given"
    with pytest.raises(ValueError, match="resolve_spec"):
        _ = SessionSpec(cwd=project, model=ModelChoice()).resolved


async def test_an_assembled_session_cleans_old_spill_files_after_its_first_request(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    old = home / "tool-output" / "old-session" / "out.txt"
    old.parent.mkdir(parents=True)
    old.write_text("x")
    long_ago = time.time() - 30 * 86_400
    os.utime(old, (long_ago, long_ago))
    session = assemble_session(SessionSpec(cwd=project, model=faux.model()))
    assert old.exists()  # housekeeping never runs before the first request
    faux.queue(text("hello"))
    await session.prompt("hi")
    for thread in threading.enumerate():
        if thread.name == "heron-housekeeping":
            thread.join(timeout=10)
    assert not old.exists() and not old.parent.exists()


def test_the_front_door_exports_the_spec_the_assembly_the_run_and_its_outcome() -> None:
    import heron.coding as front
    from heron.coding.assembly import assemble_session as assembled
    from heron.coding.outcome import RunOutcome
    from heron.coding.run import Run

    assert front.assemble_session is assembled and front.Run is Run and front.RunOutcome is RunOutcome
    assert {"SessionSpec", "StoreSpec", "assemble_session", "Run", "RunOutcome"} <= set(front.__all__)
