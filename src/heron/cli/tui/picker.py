"""A searchable selector in the terminal: type to filter, arrows to move, Enter to pick,
Esc (or Ctrl+C) to cancel. ``/resume``, ``-r``, ``/model`` and ``/tree`` use it when
heron runs in a terminal; without one those commands print their numbered lists.

It is a small prompt_toolkit application drawn below the output (not full screen), and
erased when done, so the transcript keeps only what the command then prints. The
filtering is :func:`matches` (every word typed appears in the item, in any order),
kept apart from the drawing so it is tested without a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)  # an Item[Path] is an Item[Path | None]

ROWS = 12  # items shown at once; the list scrolls
ESC_WAIT = 0.01  # no Alt+key binding here: Esc is acted on at once


@dataclass(frozen=True, slots=True)
class Item(Generic[T_co]):
    """One choice: ``label`` (what is shown and searched), ``detail`` (shown dimmed after
    it, searched too), ``value`` (what picking it returns). ``extra`` items are shown only
    when the picker's toggle (Tab) is on: ``/tree``'s internal entries."""

    label: str
    value: T_co
    detail: str = ""
    extra: bool = False
    current: bool = False


def matches(item: Item[Any], query: str) -> bool:
    """Every word of ``query`` occurs in the label or detail, case-insensitively."""
    haystack = f"{item.label} {item.detail}".casefold()
    return all(word in haystack for word in query.casefold().split())


@dataclass
class PickerState(Generic[T]):
    """What is shown: the items passing the filter (and the toggle), the selected one."""

    items: Sequence[Item[T]]
    show_extra: bool = False
    query: str = ""
    selected: int = 0
    shown: list[Item[T]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.refilter(keep_current=True)

    def refilter(self, keep_current: bool = False) -> None:
        self.shown = [item for item in self.items if (self.show_extra or not item.extra) and matches(item, self.query)]
        if keep_current:
            self.selected = next((n for n, item in enumerate(self.shown) if item.current), 0)
        else:
            self.selected = 0

    def move(self, by: int) -> None:
        if self.shown:
            self.selected = max(0, min(len(self.shown) - 1, self.selected + by))

    def chosen(self) -> Item[T] | None:
        return self.shown[self.selected] if 0 <= self.selected < len(self.shown) else None

    def window(self, rows: int = ROWS) -> tuple[int, list[Item[T]]]:
        """The first index and the items of the visible slice, keeping the selection in it."""
        start = max(0, min(self.selected - rows // 2, len(self.shown) - rows))
        return start, self.shown[start : start + rows]


def _fragments(state: PickerState[Any], toggle: str | None, width: int) -> StyleAndTextTuples:
    out: StyleAndTextTuples = []
    start, visible = state.window()
    for offset, item in enumerate(visible):
        index = start + offset
        mark = "›" if index == state.selected else " "  # noqa: RUF001 - a pointer, not a quote
        style = "reverse" if index == state.selected else ""
        label = item.label + (" (current)" if item.current else "")
        room = max(10, width - 4)
        detail = f"  {item.detail}" if item.detail else ""
        line = (label + detail)[:room]
        out.append((style, f"{mark} {line[: len(label)]}"))
        out.append((style or "fg:ansibrightblack", line[len(label) :]))
        out.append(("", "\n"))
    if not state.shown:
        out.append(("fg:ansiyellow", "  (nothing matches)\n"))
    hidden = len(state.shown) - len(visible)
    keys = "type to filter · ↑↓ move · Enter picks · Esc cancels"
    if toggle:
        keys += f" · Tab {toggle}"
    if hidden > 0:
        keys = f"{len(state.shown)} matches · " + keys
    out.append(("fg:ansibrightblack", keys))
    return out


def _bindings(state: PickerState[Any], toggle: str | None) -> Any:
    """Arrows (and Ctrl+P/N, Page Up/Down) move, Enter picks, Esc / Ctrl+C / Ctrl+D
    cancel, Tab shows the extra items; every other key types into the filter."""
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    @bindings.add("up")
    @bindings.add("c-p")
    def _up(event: KeyPressEvent) -> None:
        state.move(-1)

    @bindings.add("down")
    @bindings.add("c-n")
    def _down(event: KeyPressEvent) -> None:
        state.move(1)

    @bindings.add("pageup")
    def _page_up(event: KeyPressEvent) -> None:
        state.move(-ROWS)

    @bindings.add("pagedown")
    def _page_down(event: KeyPressEvent) -> None:
        state.move(ROWS)

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        item = state.chosen()
        if item is not None:
            event.app.exit(result=item.value)

    @bindings.add("escape", eager=True)
    @bindings.add("c-c")
    @bindings.add("c-d")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    if toggle:

        @bindings.add("tab")
        def _toggle(event: KeyPressEvent) -> None:
            state.show_extra = not state.show_extra
            state.refilter()

    return bindings


async def pick(
    title: str,
    items: Sequence[Item[T]],
    *,
    toggle: str | None = None,
    on_screen: Callable[[str], None] | None = None,
) -> T | None:
    """Let the user choose one of ``items``; its value, or None when cancelled (or when
    there is nothing to choose from). ``toggle`` names what Tab shows (the ``extra``
    items). ``on_screen`` receives the picker's text each time it is drawn (tests)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.layout import HSplit, Layout, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
    from prompt_toolkit.layout.processors import BeforeInput

    if not items:
        return None
    state: PickerState[T] = PickerState(items)
    search = Buffer(multiline=False)

    def changed(_: Buffer) -> None:
        state.query = search.text
        state.refilter()

    search.on_text_changed += changed
    bindings = _bindings(state, toggle)
    application: Application[T | None]

    def body() -> StyleAndTextTuples:
        width = application.output.get_size().columns if application.is_running else 80
        fragments = _fragments(state, toggle, width)
        if on_screen is not None:
            on_screen("".join(fragment[1] for fragment in fragments))
        return fragments

    layout = Layout(
        HSplit(
            [
                Window(FormattedTextControl([("bold", title)]), height=1),
                Window(BufferControl(search, input_processors=[BeforeInput("filter: ", style="bold")]), height=1),
                Window(FormattedTextControl(body), height=min(ROWS, len(items)) + 2),
            ]
        ),
        focused_element=search,
    )
    application = Application(layout=layout, key_bindings=bindings, full_screen=False, erase_when_done=True)
    application.ttimeoutlen = ESC_WAIT
    application.timeoutlen = ESC_WAIT
    return await application.run_async()
