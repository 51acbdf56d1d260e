"""Remote: logging and reading over HTTPS with a key (the server's key store and run owners; the client side).
Imports read, write, host, core and the team store beside it (team/); never ui/ or cli/ above it.
"""
