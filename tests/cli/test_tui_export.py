"""``/export``: a self-contained HTML file in which everything from the session is escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from heron.agent.messages import BashExecutionMessage
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.cli.tui.export import default_export_path, export_html, markdown_html, write_export
from heron.session.store import SessionStore

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'
PNG = "iVBORw0KGgo="


class Tags(HTMLParser):
    """Every start tag with its attributes, as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def assistant(*content: object, stop: StopReason = StopReason.STOP, error: str | None = None) -> AssistantMessage:
    return AssistantMessage(
        api="openai-chat",
        provider="custom",
        model="m",
        content=list(content),  # type: ignore[arg-type]
        stop_reason=stop,
        error_message=error,
    )


def session_with_everything(tmp_path: Path) -> SessionStore:
    store = SessionStore.in_memory(tmp_path)
    store.append_model_change("custom", "m<1>")
    store.append_message(
        UserMessage(content=[TextContent(text=f"please {EVIL}"), ImageContent(data=PNG, mime_type="image/png")])
    )
    store.append_message(
        assistant(
            ThinkingContent(thinking=f"thinking {EVIL}"),
            TextContent(
                text=f"Here is **bold** and {EVIL} and [link](javascript:alert(1)) and ![img](http://t.example/x.png)"
            ),
            ToolCall(id="call_1", name="bash", arguments={"command": f"echo '{EVIL}'"}),
        )
    )
    store.append_message(
        ToolResultMessage(
            tool_call_id="call_1", tool_name="bash", content=[TextContent(text=f"out {EVIL}")], is_error=True
        )
    )
    store.append_message(
        BashExecutionMessage(command=f"cat {EVIL}", output=f"o {EVIL}", exit_code=2, exclude_from_context=True)
    )
    store.append_message(assistant(stop=StopReason.ERROR, error=f"500 {EVIL}"))
    store.append_message(UserMessage(content=[ImageContent(data=PNG, mime_type='image/svg+xml"><script>')]))
    store.set_name(f"name {EVIL}")
    return store


def test_everything_from_the_session_is_escaped(tmp_path: Path) -> None:
    html = export_html(session_with_everything(tmp_path), model=f"custom/{EVIL}")
    assert "<script>" not in html
    tags = tags_of(html)
    names = {tag for tag, _ in tags}
    assert "script" not in names
    assert not [attrs for _, attrs in tags if any(key.startswith("on") for key in attrs)]
    hrefs = [attrs.get("href") for tag, attrs in tags if tag == "a"]
    assert not any(href and href.lower().startswith("javascript") for href in hrefs)
    images = [attrs.get("src") or "" for tag, attrs in tags if tag == "img"]
    assert images == [f"data:image/png;base64,{PNG}"]  # no remote image, no odd mime type
    assert html.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 7


def test_the_export_shows_messages_tools_and_outcomes(tmp_path: Path) -> None:
    html = export_html(session_with_everything(tmp_path))
    assert "<strong>bold</strong>" in html
    assert 'id="call-call_1"' in html and "tool result: bash" in html and "(error)" in html
    assert "exit code 2" in html and "not in the model&#x27;s context" in html
    assert "error: 500" in html
    assert "thinking" in html and "model: custom/m&lt;1&gt;" in html
    assert re.search(r"<title>name &lt;script&gt;", html)
    assert "Content-Security-Policy" in html  # nothing external loads even if something slipped through


def test_markdown_html_refuses_raw_html_and_script_links() -> None:
    out = markdown_html("<b>x</b> [a](javascript:alert(1)) [b](https://example.com)")
    assert "<b>" not in out and "&lt;b&gt;" in out
    assert 'href="javascript' not in out and 'href="https://example.com"' in out


def test_write_export_and_the_default_path(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    store.append_message(UserMessage(content="hi"))
    path = default_export_path(tmp_path, store.session_id)
    assert path.parent == tmp_path and path.name.startswith("heron-session-") and path.suffix == ".html"
    with pytest.raises(FileNotFoundError, match="sub: no such directory"):
        write_export(store, tmp_path / "sub" / "x.html")
    assert not (tmp_path / "sub").exists()
    (tmp_path / "sub").mkdir()
    written = write_export(store, tmp_path / "sub" / "x.html")
    assert written.read_text().startswith("<!DOCTYPE html>")
    assert written.stat().st_mode & 0o777 == 0o600
    assert "(no messages yet)" in export_html(SessionStore.in_memory(tmp_path))
