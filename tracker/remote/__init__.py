"""The remote store: the lab's server reached over HTTP(S) with a key (session, login, shipping, reading).

Imports the layers below the capabilities (core, host, read, capture, write); only the standard library's HTTP.
"""
