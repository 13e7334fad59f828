"""A long markdown answer for the streaming tests: headings, paragraphs with bold, code
spans and links, bullet and numbered lists (past ten items), fenced code with a line
wider than 80 columns, a table, wide CJK characters (spaced words and an unbroken run
wider than the terminal) and combining characters. Every prose word carries a number
(``w17``), so a test can tell which words a screen shows and in what order."""

from __future__ import annotations

CJK = "漢字かな交じり文"
RUN = "東京都新宿区西新宿二丁目八番一号の高層ビル群と周辺の再開発地域についての長い説明文です"


class _Words:
    def __init__(self) -> None:
        self.n = 0

    def take(self, count: int) -> list[str]:
        out = [f"w{self.n + i}" for i in range(count)]
        self.n += count
        return out


def _paragraph(words: _Words, count: int, section: int) -> str:
    parts = words.take(count)
    parts[3] = f"**{parts[3]} {parts[4]}**"
    del parts[4]
    parts[10] = f"`code_{parts[10]}()`"
    parts[18] = f"[{parts[18]}](https://example.com/{section})"
    parts[25] = f"cafe\u0301{parts[25]}"  # e + a combining acute accent
    parts[30] = f"n\u0303{parts[30]}"
    text = " ".join(parts)
    return text.replace(f" {parts[40]} ", f" {parts[40]}. ") if len(parts) > 41 else text


def long_answer(target_words: int = 2_000) -> str:
    words = _Words()
    blocks = ["# Report on the parser"]
    section = 0
    while sum(len(block.split()) for block in blocks) < target_words:
        section += 1
        blocks.append(f"## Section {section}")
        blocks.append(_paragraph(words, 90, section))
        cjk = " ".join(f"{CJK}{w}" for w in words.take(12))
        blocks.append(f"{cjk} {RUN} {' '.join(words.take(6))}")
        blocks.append("\n".join(f"- item {' '.join(words.take(3))} with **bold**" for _ in range(8)))
        blocks.append(_paragraph(words, 60, section))
        if section % 2:
            blocks.append("\n".join(f"{i}. step {' '.join(words.take(3))}" for i in range(1, 13)))
        else:
            code = [f"def f{section}(x):", "    # " + "a long comment line " * 6, "    return x * 2"]
            blocks.append("```python\n" + "\n".join(code) + "\n```")
            rows = [f"| {w} | {CJK} | {len(w)} |" for w in words.take(4)]
            blocks.append("| word | text | size |\n|---|---|---|\n" + "\n".join(rows))
    return "\n\n".join(blocks) + "\n"
