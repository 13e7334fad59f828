"""``heron --mode acp``: heron as an Agent Client Protocol server for editors (docs/editors.md).

The package is imported only in that mode, and the ``acp`` SDK only inside it, so the
other modes and ``heron --help`` do not pay for either.
"""
