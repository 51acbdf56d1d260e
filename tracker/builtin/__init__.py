"""Built-in plugins of tracker, registered through entry points like any other.
They import only the public surface (``tracker`` and its ``__all__``), as a stranger's plugin would.
"""
