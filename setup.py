"""The logging fast path's C extension; the rest of the project's metadata is in pyproject.toml.

The extension is optional: without a C compiler the build goes on without it
and tracker logs through the same code path in Python (tracker.write.route).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracker.write._fastline", ["tracker/write/_fastline.c"], optional=True)])
