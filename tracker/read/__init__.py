"""The read path: the reading protocol, the folder store's reader, segments, edit events, derived data.

Imports :mod:`tracker.core` and :mod:`tracker.host`; never the write path or a capability.
"""
