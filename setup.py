"""The C extensions: the logging fast path and the console recorder's lines.

The rest of the project's metadata is in pyproject.toml. Both extensions are
optional: without a C compiler the build goes on without them and tracker
does the same in Python (tracker.write.route, tracker.capture.console).
"""

from setuptools import Extension, setup

# Both write segment lines (zlib's CRC-32, decimal numbers) and hold objects for the collector: shared headers.
CRC = ["tracker/core/_crc32.h", "tracker/core/_decimal.h", "tracker/core/_gcfields.h"]

setup(ext_modules=[Extension("tracker.write._fastline", ["tracker/write/_fastline.c"], depends=CRC, optional=True),
                   # The console recorder's hot loop (tracker/capture/console.py has the same in Python).
                   Extension("tracker.capture._console", ["tracker/capture/_console.c"], depends=CRC,
                             optional=True)])
