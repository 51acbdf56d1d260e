"""The write path of one log call: the run API, run state, routes, the segment writer, origin, edits.

Imports :mod:`tracker.core`, :mod:`tracker.host`, :mod:`tracker.read` and :mod:`tracker.capture`.
"""
