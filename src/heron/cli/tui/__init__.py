"""Pieces of the interactive terminal UI that do not need a terminal: rendering of
session events with rich, slash-command parsing, the ``/context`` view and the HTML export.

Kept apart from :mod:`heron.cli.modes.interactive` (which owns prompt_toolkit and the
event loop) so each can be tested with a recording console or plain strings.
"""
