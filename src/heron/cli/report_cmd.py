"""``heron sessions report``: a session's context curve, cuts, cost, tree and transcript as one HTML file.

The page is built by :mod:`heron.coding.report` (rpc ``export_report`` and the library call
make the same one); this module only finds the session, picks the file name and, with
``--open``, hands the file to the desktop's browser.
"""

from __future__ import annotations

import argparse
import webbrowser
from pathlib import Path
from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Register ``report`` on the ``heron sessions`` sub-commands."""
    report = commands.add_parser(
        "report", help="write a session's report (context curve, every cut, cost, tree, transcript) as HTML"
    )
    report.add_argument(
        "file", nargs="?", default=None, help="a session file or id prefix (default: this directory's latest)"
    )
    report.add_argument("-o", "--output", default=None, metavar="FILE.html", help="where to write the page")
    report.add_argument("--open", action="store_true", help="open the page in the browser afterwards")
    report.add_argument(
        "--window", type=int, default=None, metavar="TOKENS", help="the model's context window (default: catalogue)"
    )
    report.add_argument("--full", action="store_true", help="embed the whole transcript, however large")


def default_output(session_id: str, cwd: Path) -> Path:
    return cwd / f"heron-report-{session_id[:8]}.html"


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from heron.ai.models import heron_home
    from heron.coding.report import write_report
    from heron.coding.report.sources import catalogue_windows, configured_reserve
    from heron.session.paths import latest_session, resolve_session
    from heron.session.store import SessionStore

    cwd = Path.cwd()
    home = heron_home()
    if args.window is not None and args.window < 1:
        print("heron sessions report: --window takes a positive number of tokens", file=err)
        return 2
    path = resolve_session(args.file) if args.file else latest_session(cwd, home)
    if path is None:
        print(f"heron sessions report: no session in {cwd}; name one (heron sessions list --all)", file=err)
        return 1
    with SessionStore.open(path, read_only=True) as store:
        target = Path(args.output) if args.output else default_output(store.session_id, cwd)
        session_cwd = Path(store.header.cwd) if store.header is not None and store.header.cwd else cwd
        windows = (lambda _model: args.window) if args.window else catalogue_windows(home)
        written = write_report(
            store, target, windows=windows, reserve=configured_reserve(session_cwd, home), full=args.full
        )
    print(str(written), file=out)
    if args.open:
        webbrowser.open(written.resolve().as_uri())
    return 0
