"""The version of tracker, in one place: the package metadata (pyproject.toml reads it), ``tracker.__version__``
and ``tracker --version`` all take it from here; CHANGELOG.md's newest heading is it (a test keeps them equal)."""

__version__ = "0.6.0"
