"""Recognising a session whose last prompt was never answered (heron.session.unanswered)."""

from __future__ import annotations

from pathlib import Path

from heron.agent.messages import ExtensionMessage
from heron.ai.types import ImageContent, TextContent, UserMessage
from heron.session.store import SessionStore
from heron.session.unanswered import unanswered_prompt
from tests.session.support import assistant, user


def reopened(store: SessionStore) -> SessionStore:
    assert store.path is not None
    store.close()
    return SessionStore.open(store.path)


def test_the_last_prompt_left_in_the_file_with_nothing_after_it_is_unanswered(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    assert unanswered_prompt(store) is None  # empty
    store.append_model_change("faux", "faux-1")
    prompt = store.append_message(user("hello"))
    # appended by this process: being answered, not "unanswered"
    assert unanswered_prompt(store) is None
    store = reopened(store)
    found = unanswered_prompt(store)
    assert found is not None and found.entry_id == prompt.id and found.parent_id == prompt.parent_id
    assert found.parts() == ("hello", [])
    # records that carry no message do not answer it
    store.append_custom("heron.ledger", {"kind": "prune"})
    store.append_thinking_level_change("high")
    store.set_label(prompt.id, "important")
    store = reopened(store)
    found = unanswered_prompt(store)
    assert found is not None and found.entry_id == prompt.id
    store.append_message(assistant("hi"))
    assert unanswered_prompt(store) is None
    store.close()


def test_any_message_after_the_prompt_answers_it(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    first = store.append_message(user("one"))
    store.append_message(ExtensionMessage(custom_type="x", content="a note"))
    store = reopened(store)
    assert unanswered_prompt(store) is None
    store.branch(first.id)  # the leaf decides: back on the prompt, it is unanswered there
    found = unanswered_prompt(store)
    assert found is not None and found.entry_id == first.id and found.parent_id is None
    store.append_message(assistant("an error counts as an answer too"))
    assert unanswered_prompt(store) is None
    store.close()


def test_an_in_memory_session_has_none(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    store.append_message(user("preloaded, then the task"))  # a sub-agent's skills message
    assert unanswered_prompt(store) is None


def test_the_parts_of_a_prompt_keep_its_images(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    image = ImageContent(data="AAAA", mime_type="image/png")
    store.append_message(UserMessage(content=[TextContent(text="look"), image]))
    found = unanswered_prompt(reopened(store))
    assert found is not None and found.parts() == ("look", [image])
