"""Remote: logging and reading over HTTPS with a key (key store and run owners; session, shipping, reading).
Imports read, write, host, core and the team store beside it (team/); never ui/ or cli/ above it.
"""
