"""The team store: a lab's runs in PostgreSQL and its blobs in a bucket, written by `tracker sync`, read back.

Imports the layers below the capabilities (core, host, read, capture, write); psycopg and obstore only when used.
"""
