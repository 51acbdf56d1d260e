"""mkdocs hook: the site's front page is README.md, so the two never drift apart.

docs/index.md holds a marker line; this hook replaces it with README.md up to
its "## Documentation" section, with its links rewritten for the site
(``docs/x.md`` -> ``x.md``, ``CHANGELOG.md`` -> ``changelog.md``). What
follows the marker in docs/index.md ends the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MARKER = "<!-- readme -->"
CUT = "\n## Documentation"


def front_page(readme: str) -> str:
    """README.md's text as the site's front page: up to its documentation section, links rewritten."""
    text = readme.split(CUT, 1)[0]
    text = text.replace("<!-- test-command -->\n", "")
    text = re.sub(r"\]\(docs/", "](", text)
    return text.replace("](CHANGELOG.md)", "](changelog.md)").rstrip() + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    """Replace the marker of docs/index.md with README.md's text."""
    if MARKER not in markdown:
        return markdown
    readme = (Path(config.config_file_path).parent / "README.md").read_text(encoding="utf-8")
    return markdown.replace(MARKER, front_page(readme))
