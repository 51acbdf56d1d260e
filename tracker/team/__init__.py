"""The team store: a lab's runs in PostgreSQL, written by ``tracker sync`` and read through the protocol.

Imports the layers below the capabilities (core, host, read, capture, write); psycopg only when used.
"""
