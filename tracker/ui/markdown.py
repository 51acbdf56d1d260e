"""Markdown to HTML for a report's notes: a small renderer that escapes everything first.

Every character of the text is HTML-escaped before any markup is added, so
what the notes hold (``<script>``, ``<img onerror=...>``, entities) is shown
as text and can never become an element or an attribute; the only markup is
what this module writes. What it reads: ATX headings (``#`` to ``######``),
paragraphs (a line ending in two spaces breaks), ``-``/``*``/``+`` and
``1.`` lists (one level), ``>`` quotes, fenced code blocks (```` ``` ````),
``---`` rules, pipe tables with a ``|---|`` line, and inline ``code``,
``**bold**``, ``*italic*``/``_italic_``, ``~~struck~~`` and
``[links](https://...)``. A link goes only to ``http:``, ``https:``,
``mailto:`` or an ``#anchor`` (anything else is shown as text), opens in a
new tab with ``rel="noopener noreferrer"``; an image (``![alt](src)``) is
shown as its alt text and address, since a report loads nothing from outside.
No dependency: reports are written by the core, and the notes are trusted to
nothing.
"""

from __future__ import annotations

import html
import re

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ULIST = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_OLIST = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?!\*)|(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_SAFE_URL = re.compile(r"^(https?://|mailto:|#)", re.I)


def _inline(escaped: str) -> str:
    """Inline markup of one escaped line (or paragraph); code spans are kept as they are."""
    codes: list[str] = []

    def keep(m: re.Match[str]) -> str:
        codes.append(f"<code>{m.group(2).strip()}</code>")
        return f"\x00{len(codes) - 1}\x00"

    text = _CODE.sub(keep, escaped)
    text = _IMAGE.sub(lambda m: f"[image: {m.group(1) or 'no description'} ({m.group(2)})]", text)

    def link(m: re.Match[str]) -> str:
        label, url = m.group(1), m.group(2)
        if not _SAFE_URL.match(url):
            return m.group(0)
        return f'<a href="{url}" target="_blank" rel="noopener noreferrer">{label}</a>'

    text = _LINK.sub(link, text)
    text = _BOLD.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", text)
    text = _ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", text)
    text = _STRIKE.sub(lambda m: f"<del>{m.group(1)}</del>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], text)


def _cells(line: str) -> list[str]:
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def render(text: str) -> str:
    """``text`` (markdown) as HTML, every character of it escaped first (see the module's docstring)."""
    lines = html.escape(text.replace("\r\n", "\n").replace("\r", "\n"), quote=True).split("\n")
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            body = ""
            for i, p in enumerate(para):
                hard = p.endswith("  ") and i < len(para) - 1
                body += _inline(p.strip()) + ("<br>" if hard else (" " if i < len(para) - 1 else ""))
            out.append(f"<p>{body}</p>")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            mark = fence.group(1)
            code = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(mark):
                code.append(lines[i])
                i += 1
            out.append("<pre><code>" + "\n".join(code) + "</code></pre>")
            i += 1
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if line.lstrip().startswith("&gt;"):
            flush()
            quoted = []
            while i < len(lines) and lines[i].lstrip().startswith("&gt;"):
                quoted.append(lines[i].lstrip()[4:].lstrip())
                i += 1
            out.append(f"<blockquote><p>{_inline(' '.join(q for q in quoted if q))}</p></blockquote>")
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]) and "-" in lines[i + 1]:
            flush()
            head = _cells(line)
            i += 2
            rows = []
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_cells(lines[i]))
                i += 1
            thead = "".join(f"<th>{_inline(c)}</th>" for c in head)
            tbody = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r[:len(head)]) +
                            "<td></td>" * max(0, len(head) - len(r)) + "</tr>" for r in rows)
            out.append(f"<table><thead><tr>{thead}</tr></thead><tbody>{tbody}</tbody></table>")
            continue
        for pattern, tag in ((_ULIST, "ul"), (_OLIST, "ol")):
            if pattern.match(line):
                flush()
                items = []
                while i < len(lines) and pattern.match(lines[i]):
                    item = [pattern.match(lines[i]).group(1)]  # type: ignore[union-attr]
                    i += 1
                    # a continuation line (indented, not a new item) belongs to the item
                    while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and \
                            not _ULIST.match(lines[i]) and not _OLIST.match(lines[i]):
                        item.append(lines[i].strip())
                        i += 1
                    items.append(f"<li>{_inline(' '.join(item))}</li>")
                out.append(f"<{tag}>{''.join(items)}</{tag}>")
                break
        else:
            para.append(line)
            i += 1
    flush()
    return "\n".join(out)


__all__ = ["render"]
