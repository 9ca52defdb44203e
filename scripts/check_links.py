#!/usr/bin/env python3
"""Every link from README.md and docs/*.md to a file of the repository,
and to a heading in one (`](#anchor)`, `](docs/x.md#anchor)`), resolves.

Anchors are made as GitHub makes them: the heading's text lower-cased,
everything but letters, digits, `_`, `-` and spaces dropped, spaces made
`-`, a repeated anchor suffixed `-1`, `-2`. Headings inside code fences
do not count. Run from anywhere: `python3 scripts/check_links.py`; it
prints each broken link and exits 1 when there is one.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def anchors(path):
    seen = {}
    out = set()
    fence = False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('```'):
                fence = not fence
                continue
            m = None if fence else re.match(r'^#{1,6} (.*?)\s*#*\s*$', line)
            if not m:
                continue
            a = re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-')
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f'{a}-{n}')
    return out


def links(path):
    """(line number, target) of every Markdown link outside code fences."""
    fence = False
    with open(path, encoding='utf-8') as f:
        for no, line in enumerate(f, 1):
            if line.startswith('```'):
                fence = not fence
                continue
            if fence:
                continue
            line = re.sub(r'`[^`]*`', '', line)
            for m in re.finditer(r'\]\(([^)\s]+)\)', line):
                yield no, m.group(1)


def main():
    files = [os.path.join(ROOT, 'README.md')]
    docs = os.path.join(ROOT, 'docs')
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    cache = {}
    broken = 0
    for path in files:
        for no, target in links(path):
            if re.match(r'^[a-z]+:', target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f'{os.path.relpath(path, ROOT)}:{no}: {target}'
            if not os.path.exists(dest):
                print(f'{where}: no file {os.path.relpath(dest, ROOT)}')
                broken += 1
                continue
            if anchor and dest.endswith('.md'):
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    print(f'{where}: no heading #{anchor} in {os.path.relpath(dest, ROOT)}')
                    broken += 1
    if broken:
        print(f'{broken} broken link(s)')
        return 1
    print(f'links ok in {len(files)} files')
    return 0


if __name__ == '__main__':
    sys.exit(main())
