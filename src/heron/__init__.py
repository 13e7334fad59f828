"""heron: a coding-agent harness that manages its context window as a working set."""

__version__ = "0.1.0"
