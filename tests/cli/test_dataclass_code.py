"""The table of code ``@dataclass`` generates (heron.cli.dataclass_code): classes made from it
behave as ``dataclasses`` makes them, a second start compiles nothing, and a damaged, foreign
or unwritable table costs a compile, never an error."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.cli import dataclass_code

SRC = Path(__file__).resolve().parents[2] / "src"

# Every kind of generated method: init with defaults and factories, repr, eq, order, frozen
# (setattr, delattr, hash), slots, keyword-only, InitVar with __post_init__.
SHAPES = """
from dataclasses import dataclass, field, InitVar

@dataclass
class Plain:
    name: str
    size: int = 3
    tags: list[str] = field(default_factory=list)

@dataclass(frozen=True, slots=True, order=True)
class Point:
    x: int
    y: int = 0

@dataclass(kw_only=True)
class Options:
    depth: int
    scale: InitVar[int] = 2
    total: int = 0

    def __post_init__(self, scale: int) -> None:
        self.total = self.depth * scale
"""


def _shapes() -> dict[str, object]:
    module = types.ModuleType("dataclass_code_shapes")  # string annotations are resolved in it
    sys.modules[module.__name__] = module
    try:
        exec(compile(SHAPES, module.__name__, "exec"), vars(module))
    finally:
        del sys.modules[module.__name__]
    return vars(module)


def _behaviour(namespace: dict[str, object]) -> list[object]:
    plain, point, options = namespace["Plain"], namespace["Point"], namespace["Options"]
    first = plain("a")  # type: ignore[operator]
    first.tags.append("x")
    frozen = point(1, 2)  # type: ignore[operator]
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.x = 5
    return [
        repr(first),
        first == plain("a", 3, ["x"]),  # type: ignore[operator]
        plain("b").tags is not plain("b").tags,  # type: ignore[operator]
        repr(frozen),
        frozen < point(1, 3),  # type: ignore[operator]
        hash(frozen) == hash(point(1, 2)),  # type: ignore[operator]
        repr(options(depth=4)),  # type: ignore[operator]
        [f.name for f in dataclasses.fields(options)],  # type: ignore[arg-type]
    ]


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "__pycache__" / "dataclass-code.bin"
    dataclass_code.install(str(path))
    try:
        yield path
    finally:
        dataclass_code.uninstall()


def test_classes_from_the_table_behave_as_dataclasses_makes_them(table: Path) -> None:
    served = _behaviour(_shapes())  # compiled, then served from the table
    again = _behaviour(_shapes())
    dataclass_code.uninstall()
    plain = _behaviour(_shapes())
    assert served == again == plain
    assert served[0] == "Plain(name='a', size=3, tags=['x'])"
    assert served[6] == "Options(depth=4, total=8)"


def test_the_table_is_saved_and_a_second_start_compiles_nothing(tmp_path: Path) -> None:
    path = tmp_path / "table.bin"
    probe = textwrap.dedent(f"""
        from heron.cli import dataclass_code
        dataclass_code.install({str(path)!r})
        import sys, types
        module = types.ModuleType("shapes")
        sys.modules["shapes"] = module
        exec({SHAPES!r}, vars(module))
        import heron.ai.types
        print(dataclass_code.compiled())
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC)}

    def start() -> int:
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return int(done.stdout)

    assert start() > 10  # the first start compiles and writes at exit
    written = path.stat().st_mtime_ns
    assert start() == 0
    assert path.stat().st_mtime_ns == written  # nothing new: not rewritten


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", importlib.util.MAGIC_NUMBER + b"\x00\x01", b"\x00\x00\x00\x00" + b"x" * 40],
    ids=["empty", "garbage", "torn", "another interpreter"],
)
def test_a_damaged_or_foreign_table_is_compiled_again_and_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "table.bin"
    path.write_bytes(content)
    dataclass_code.install(str(path))
    try:
        assert _behaviour(_shapes())[0] == "Plain(name='a', size=3, tags=['x'])"
    finally:
        dataclass_code.uninstall()
    assert path.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    dataclass_code.install(str(path))
    try:
        _shapes()
        assert dataclass_code.compiled() == 0
    finally:
        dataclass_code.uninstall()


def test_a_directory_that_cannot_be_written_costs_a_compile_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    dataclass_code.install(str(blocker / "__pycache__" / "table.bin"))
    try:
        assert _behaviour(_shapes())[1] is True
    finally:
        dataclass_code.uninstall()  # saves: fails quietly
    assert blocker.read_text() == "not a directory"


def test_a_full_table_keeps_only_what_the_process_used(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataclass_code, "MAX_TEXTS", 2)
    stale = {f"def __create_fn__():\n def f{n}(): pass\n return f{n}": b"" for n in range(5)}
    assert dataclass_code._table is not None
    dataclass_code._table.stored.update(stale)
    _shapes()
    dataclass_code.uninstall()
    kept = dataclass_code._read(str(table))
    assert kept and not set(kept) & set(stale)


def test_installing_twice_and_uninstalling_restore_the_builtin(table: Path) -> None:
    dataclass_code.install(str(table.parent / "other.bin"))  # ignored: already installed
    assert dataclasses.exec is dataclass_code._exec  # type: ignore[attr-defined]
    dataclass_code.uninstall()
    assert "exec" not in vars(dataclasses)
    dataclass_code.uninstall()  # twice: nothing to do


@pytest.mark.parametrize(
    ("command", "installed"),
    [(["sessions", "--help"], "True"), (["--version"], "no dataclasses")],
    ids=["a command that loads heron", "--version"],
)
def test_the_heron_command_installs_it_before_its_classes_only(command: list[str], installed: str) -> None:
    probe = f"import sys; from heron.cli import main; sys.argv = ['heron', *{command!r}]; main.main()"
    report = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('exec' in vars(sys.modules['dataclasses'])"
        " if 'dataclasses' in sys.modules else 'no dataclasses'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"{report}\n{probe}"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == installed
