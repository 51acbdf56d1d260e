"""Built-in plugins of tracker, registered through entry points like any other."""
