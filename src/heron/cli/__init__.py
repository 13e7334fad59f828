"""The ``heron`` command: presents the coding runtime in a terminal or over pipes."""
