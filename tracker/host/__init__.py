"""The plugin host: the plugin manager, the hook specifications, the event bus and the registries.

Imports only :mod:`tracker.core`.
"""
