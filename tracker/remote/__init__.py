"""Remote: logging to and reading from a lab's `tracker server` over HTTP(S) with a key (session, shipper, reader).

Imports the layers below the capabilities (core, host, read, capture, write); nothing above; HTTP only when used.
"""
