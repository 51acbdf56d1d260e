"""The Model Context Protocol server of ``tracker mcp``: read-only tools over a store for assistants.
May import the read core, ``tracker.ui.series``, ``tracker.query`` and ``tracker.alerts``; mcp in server.py.

:mod:`.tools` holds what each tool answers as plain data (no SDK), so the
answers are tested without a client; :mod:`.server` registers them with the
official ``mcp`` SDK (optional extra ``tracker-core[mcp]``) and serves them over
stdio or streamable HTTP on a loopback address.
"""
