"""A streamed answer leaves the transcript the same answer leaves when received at once:
the lines of a growing paragraph or bullet list printed early are the lines of its whole
rendering, at any width and however the text is cut into chunks; what is not printed
yet is the live block, and nothing is printed twice."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from rich.cells import cell_len

from heron.agent.events import MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from heron.ai.events import TextDeltaEvent, TextEndEvent, TextStartEvent
from heron.ai.types import AssistantMessage, TextContent
from heron.cli.tui.live_view import live_block
from heron.cli.tui.render import Renderer
from heron.cli.tui.settled import settled
from tests.cli.tui_helpers import output, recording_console
from tests.support.long_answer import long_answer


def streamed(width: int, chunks: list[str], during: list[str] | None = None) -> str:
    """What the renderer prints for an answer streamed in ``chunks``; ``during`` collects
    the transcript plus the live block after each chunk."""
    renderer = Renderer(recording_console(width=width))
    message = AssistantMessage(api="faux", provider="faux", model="m")
    renderer.handle(MessageStartEvent(message=message))
    renderer.handle(MessageUpdateEvent(message=message, event=TextStartEvent(content_index=0, partial=message)))
    printed = ""
    for chunk in chunks:
        delta = TextDeltaEvent(content_index=0, delta=chunk, partial=message)
        renderer.handle(MessageUpdateEvent(message=message, event=delta))
        if during is not None:
            printed += output(renderer.console)
            during.append(printed + "\n" + live_block(renderer, width))
    end = TextEndEvent(content_index=0, content=TextContent(text="".join(chunks)), partial=message)
    renderer.handle(MessageUpdateEvent(message=message, event=end))
    message.content.append(TextContent(text="".join(chunks)))
    renderer.handle(MessageEndEvent(message=message))
    return printed + output(renderer.console)


def cut(text: str, rng: random.Random, largest: int) -> list[str]:
    chunks, at = [], 0
    while at < len(text):
        size = rng.randint(1, largest)
        chunks.append(text[at : at + size])
        at += size
    return chunks


@pytest.mark.parametrize("width", [200, 80, 37])
def test_a_streamed_answer_prints_what_the_whole_answer_prints(width: int) -> None:
    text = long_answer(700)  # the 2,000 words stream through the real program: test_interactive_streaming.py
    whole = streamed(width, [text])
    for seed, largest in [(2, 12), (3, 40)]:
        assert streamed(width, cut(text, random.Random(seed), largest)) == whole, (seed, largest)
    assert all(cell_len(line) <= width for line in whole.splitlines())
    assert "**" not in whole and "# Report" not in whole  # rendered as markdown


def test_chunks_of_one_to_three_characters_print_the_same() -> None:
    text = long_answer(300)
    assert streamed(80, cut(text, random.Random(1), 3)) == streamed(80, [text])


def test_a_long_paragraph_reaches_the_transcript_line_by_line_while_it_streams() -> None:
    words = [f"w{n}" for n in range(300)]
    text = " ".join(words) + "\n\nAfter."
    during: list[str] = []
    final = streamed(60, [w + " " for w in words] + ["\n\nAfter."], during)
    middle = during[150]  # word w150 has just arrived; the paragraph is far from done
    assert "w150" in middle and "w151" not in middle
    assert " ".join(middle.split()) == " ".join(words[:151])  # transcript + live: every word once, in order
    assert final.startswith(middle.split("\n", 2)[0])  # the first lines were printed already
    assert " ".join(final.split()) == " ".join(text.split())


def test_what_may_be_printed_early() -> None:
    found = settled("text", "one two thr")
    assert found is not None and found.text == "one two" and found.unsettled == 1
    assert settled("text", "see `a b") is None  # a code span left open
    assert settled("text", "see [the link](http") is None
    assert settled("text", "## Heading that grows") is None  # a heading: printed whole
    assert settled("text", "1. one\n2. two\n3. th") is None  # numbered: the column may widen
    assert settled("text", "text\n```\ncode") is None
    items = settled("text", "- one\n- two\n- thr")
    assert items is not None and items.text == "- one\n- two" and items.unsettled == 0
    assert settled("text", "- one\n\n  more\n- two\n- th") is None  # loose: held whole
    assert settled("thinking", "so I think") is not None


def test_thinking_streamed_prints_what_it_prints_whole() -> None:
    from heron.ai.events import ThinkingDeltaEvent, ThinkingEndEvent, ThinkingStartEvent
    from heron.ai.types import ThinkingContent

    text = " ".join(f"t{n}" for n in range(400)) + "\n\nand 漢字かな交じり文 " * 20

    def printed(chunks: list[str]) -> str:
        renderer = Renderer(recording_console(width=50))
        message = AssistantMessage(api="faux", provider="faux", model="m")
        renderer.handle(MessageStartEvent(message=message))
        renderer.handle(MessageUpdateEvent(message=message, event=ThinkingStartEvent(content_index=0, partial=message)))
        for chunk in chunks:
            delta = ThinkingDeltaEvent(content_index=0, delta=chunk, partial=message)
            renderer.handle(MessageUpdateEvent(message=message, event=delta))
        end = ThinkingEndEvent(content_index=0, content=ThinkingContent(thinking=text), partial=message)
        renderer.handle(MessageUpdateEvent(message=message, event=end))
        return output(renderer.console)

    whole = printed([text])
    assert printed(cut(text, random.Random(5), 9)) == whole and "t399" in whole


def test_lines_leave_the_live_block_only_once_they_are_on_the_screen() -> None:
    """Printed lines reach a terminal a moment later (written above the input line by the
    event loop): until then the live block keeps showing them, so none goes missing."""
    renderer = Renderer(recording_console(width=40))
    waiting: list[Callable[[], None]] = []
    renderer.when_written = waiting.append  # the terminal has not written anything yet
    message = AssistantMessage(api="faux", provider="faux", model="m")
    renderer.handle(MessageStartEvent(message=message))
    renderer.handle(MessageUpdateEvent(message=message, event=TextStartEvent(content_index=0, partial=message)))
    words = [f"w{n}" for n in range(40)]
    for chunk in [" ".join(words[:20]) + " ", " ".join(words[20:]) + "\n\n", "Next"]:
        delta = TextDeltaEvent(content_index=0, delta=chunk, partial=message)
        renderer.handle(MessageUpdateEvent(message=message, event=delta))
    assert "w0 w1" in output(renderer.console)  # printed (on its way to the screen)
    live = live_block(renderer, 40)
    assert " ".join(live.split()) == " ".join([*words, "Next"])  # so still shown live, all of it
    for callback in waiting:
        callback()  # now on the screen
    assert live_block(renderer, 40) == "Next"
