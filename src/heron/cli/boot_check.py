"""``python -m heron.cli.boot_check``: every start-up trick of :mod:`heron.cli.boot` applied in
this interpreter and checked to do what it says. The tricks lean on interpreter details
(the text ``dataclasses`` generates and runs through ``exec``, ``gc.freeze``), so this runs
under each Python heron supports that a machine has (tests/cli/test_boot.py); kept apart
from the boot module so that ``heron``'s own start never compiles or loads it.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import tempfile
from typing import Any

from heron.cli import boot, dataclass_code


def self_check() -> list[str]:
    """Every trick applied in this interpreter, and what did not do what it says."""
    problems = []
    gc.enable()
    boot.begin()
    if gc.isenabled() or sys.modules.get("httpx._main", 0) is not None:
        problems.append("begin: the collector still runs or httpx's CLI is not kept out")
    with tempfile.TemporaryDirectory() as folder:
        dataclass_code.install(os.path.join(folder, "table.bin"))
        try:
            fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
                ("x", int),
                ("y", int, dataclasses.field(default=2)),
            ]
            first = dataclasses.make_dataclass("Shape", fields)
            compiled = dataclass_code.compiled()
            second = dataclasses.make_dataclass("Shape", fields)  # made from the first one's code
            if compiled == 0 or dataclass_code.compiled() != compiled or repr(second(1)) != repr(first(1)):
                problems.append("dataclass code: the table compiled again, or made a different class")
        finally:
            dataclass_code.uninstall()
    made = [[n] for n in range(1_000)]
    boot.session_built()
    if not gc.isenabled() or gc.get_freeze_count() < len(made):
        problems.append("session_built: start-up's objects are not frozen or collection did not resume")
    boot.end()
    if gc.isenabled():
        problems.append("end: the collector still runs at exit")
    return problems


if __name__ == "__main__":
    found = self_check()
    print("\n".join(found) or f"ok {sys.version_info.major}.{sys.version_info.minor}")
    raise SystemExit(1 if found else 0)
