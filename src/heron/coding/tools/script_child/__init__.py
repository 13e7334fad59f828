"""What runs inside a ``script``'s own Python process (docs/script.md).

Nothing in this directory imports heron: the parent puts the directory on the child's
``sys.path`` and runs :mod:`heron_script_runner`, which gives the script the functions of
:mod:`heron_tools`. The files are plain modules of the standard library's Python so the
child starts in milliseconds whatever heron itself loads.
"""
