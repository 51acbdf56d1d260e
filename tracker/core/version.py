"""The version of tracker, in one place: the package metadata reads it (pyproject.toml), ``tracker.__version__``
and ``tracker --version`` give it, and CHANGELOG.md's newest heading is it (tests/test_version.py)."""

__version__ = "0.7.0"
