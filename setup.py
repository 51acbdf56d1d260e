"""The C extensions: the logging fast path and the console recorder's lines.

The rest of the project's metadata is in pyproject.toml. Both extensions are
optional: where no C compiler works the build goes on without them, says so in
one notice, and tracker does the same in Python (tracker.write.route,
tracker.capture.console); `tracker doctor` says which path is in use.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Both write segment lines (zlib's CRC-32, decimal numbers) and hold objects for the collector: shared headers.
CRC = ["tracker/core/_crc32.h", "tracker/core/_decimal.h", "tracker/core/_gcfields.h"]


class OptionalBuildExt(build_ext):
    """Builds each extension if it can; what it cannot build is named in one notice at the end."""

    def run(self) -> None:
        self.failed: list[str] = []
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler at all (DistutilsPlatformError and kin)
            self.failed = [ext.name for ext in self.extensions]
            self._notice(exc)
            return
        if self.failed:
            self._notice(None)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001 - CompileError, LinkError, a compiler that is not there
            self.failed.append(ext.name)
            self.last_error = exc

    def _notice(self, exc: object) -> None:
        why = exc if exc is not None else getattr(self, "last_error", "")
        print(f"tracker: no working C compiler ({str(why).strip() or type(why).__name__}): "
              f"{', '.join(self.failed)} not built; tracker uses its Python fallback, which writes the same bytes "
              "(`tracker doctor` says so)", file=sys.stderr)


setup(ext_modules=[Extension("tracker.write._fastline", ["tracker/write/_fastline.c"], depends=CRC),
                   # The console recorder's hot loop (tracker/capture/console.py has the same in Python).
                   Extension("tracker.capture._console", ["tracker/capture/_console.c"], depends=CRC)],
      cmdclass={"build_ext": OptionalBuildExt})
