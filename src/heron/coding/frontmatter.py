"""YAML front matter at the top of a markdown file (skills and prompt templates).

Shared by :mod:`heron.coding.skills` and :mod:`heron.coding.templates` so both read the
same dialect: an opening ``---`` line (a UTF-8 BOM and CRLF line endings tolerated), YAML,
then a closing ``---`` (or ``...``) line. A file without that opening line simply has no
front matter; a YAML error is reported with its line number *in the file* (not in the
YAML block) so a user can go straight to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # PyYAML is imported by the first file that has front matter
    import yaml

_OPEN = "---"
_CLOSE = ("---", "...")


class FrontMatterError(ValueError):
    """The front matter is present but is not a valid YAML mapping."""


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """The parsed header (``present`` False when the file has none) and the body after it."""

    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    present: bool = False


def parse_front_matter(text: str) -> FrontMatter:
    """Split ``text`` into front matter and body.

    Raises :class:`FrontMatterError` for invalid YAML (message names the file line) or a
    header that is not a mapping. An opening ``---`` without a closing line is treated as
    no front matter: the whole text is the body, as a markdown renderer would show it.
    """
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _OPEN:
        return FrontMatter(body=text)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in _CLOSE), None)
    if end is None:
        return FrontMatter(body=text)
    block = "\n".join(lines[1:end])
    body = "\n".join(lines[end + 1 :])
    import yaml

    try:
        data = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        raise FrontMatterError(_describe_yaml_error(exc)) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError(f"front matter must be a mapping of keys to values, not {type(data).__name__}")
    return FrontMatter(data={str(k): v for k, v in data.items()}, body=body, present=True)


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    """``invalid YAML front matter at line N, column M: problem`` with file coordinates.

    The YAML block starts on the file's second line, hence the offset of 2 on the
    0-based line PyYAML reports."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    detail = f"{problem} ({context})" if context else str(problem)
    if mark is None:
        return f"invalid YAML front matter: {detail}"
    return f"invalid YAML front matter at line {mark.line + 2}, column {mark.column + 1}: {detail}"
