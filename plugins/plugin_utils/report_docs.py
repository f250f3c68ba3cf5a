# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The built-in checks' docs pages as HTML, written beside the HTML report (#44).

This module util is PRIVATE to the collection. It can have breaking changes at any time.

The report's "Docs" link used to be a file:// path to the collection's Markdown: raw text in a browser,
and dead on any other machine. The pages are this collection's own docs/<id>.md, rendered here with the
few constructs they use (headings, paragraphs, lists, fenced code, tables kept as text, `code`,
**bold**, [links](...)); every character is escaped before any markup is added.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from html import escape

DOCS_DIR = 'postmortem-docs'
_LINK = re.compile(r'\[([^\]]+)\]\(([^)\s]+)\)')
_CODE = re.compile(r'`([^`]+)`')
_BOLD = re.compile(r'\*\*([^*]+)\*\*')
STYLE = ('body{font-family:system-ui,sans-serif;max-width:60em;margin:20px auto;padding:0 16px;color:#212121;line-height:1.45}'
         'pre{background:#f5f5f5;padding:8px;overflow-x:auto}code{background:#f5f5f5;padding:0 2px}')


def _inline(text):
    """One line of Markdown text as HTML: escaped first, then code, bold and links (a link to another
    docs page goes to its rendered page; only http(s) and relative links are kept)."""
    parts = _CODE.split(text)
    out = []
    for index, part in enumerate(parts):
        if index % 2:
            out.append('<code>%s</code>' % escape(part))
            continue
        html = _BOLD.sub(r'<strong>\1</strong>', escape(part, quote=False))
        out.append(_LINK.sub(_link, html))
    return ''.join(out)


def _link(match):
    label, href = match.group(1), match.group(2)
    if href.endswith('.md') and '/' not in href:
        href = href[:-3] + '.html'
    if not re.match(r'\A(https?://|[A-Za-z0-9_.#-][^:]*\Z)', href):
        return label
    return '<a href="%s">%s</a>' % (escape(href), label)


def render(markdown, title):
    """A docs page as a whole HTML document."""
    body, paragraph, items, fence = [], [], [], None

    def flush():
        if paragraph:
            body.append('<p>%s</p>' % _inline(' '.join(paragraph)))
            del paragraph[:]
        if items:
            body.append('<ul>%s</ul>' % ''.join('<li>%s</li>' % _inline(item) for item in items))
            del items[:]

    for line in markdown.split('\n'):
        if fence is not None:
            if line.startswith('```'):
                body.append('<pre>%s</pre>' % escape('\n'.join(fence)))
                fence = None
            else:
                fence.append(line)
            continue
        heading = re.match(r'(#{1,6}) (.*)', line)
        if line.startswith('```'):
            flush()
            fence = []
        elif heading:
            flush()
            level = len(heading.group(1))
            body.append('<h%d>%s</h%d>' % (level, _inline(heading.group(2)), level))
        elif re.match(r'\s*[-*] ', line):
            if paragraph:
                flush()
            items.append(re.sub(r'\A\s*[-*] ', '', line))
        elif line.startswith('|'):
            flush()
            body.append('<pre>%s</pre>' % escape(line))
        elif not line.strip():
            flush()
        elif items and line.startswith('  '):
            items[-1] += ' ' + line.strip()
        else:
            paragraph.append(line.strip())
    if fence is not None:
        body.append('<pre>%s</pre>' % escape('\n'.join(fence)))
    flush()
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>%s</title><style>%s</style></head>'
            '<body>\n%s\n</body></html>\n' % (escape(title), STYLE, '\n'.join(body)))


def pages(check_ids, docs_dir):
    """{file name: HTML} for each check id whose page docs_dir holds (declared checks have none)."""
    found = {}
    for cid in check_ids:
        path = os.path.join(docs_dir, '%s.md' % cid)
        if re.match(r'\A[a-z0-9_]+\Z', cid) and os.path.isfile(path):
            with open(path, encoding='utf-8') as handle:
                found['%s.html' % cid] = render(handle.read(), '%s (homelab.postmortem)' % cid)
    return found
