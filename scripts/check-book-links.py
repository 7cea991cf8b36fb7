#!/usr/bin/env python3
"""Check the links of a built mdBook: every relative link and #anchor resolves.

Usage: check-book-links.py BOOK_DIR     (e.g. target/book, built by
`mdbook build docs -d target/book`)

Walks every .html file under BOOK_DIR and, for each `href` and `src`
attribute, checks that a relative target exists under BOOK_DIR and, when it
has a `#fragment`, that the target page has an element with that `id` (or
an `<a name>`). A bare `#fragment` is checked against its own page.
External links (http:, https:, mailto: and other schemes, and
protocol-relative `//host` ones) are NOT checked: CI has no network, and a
dead external site is not a defect of the book. mdBook's 404.html is
skipped (its links are absolute to the site root, by design).

Exits 1 and lists every broken link, with the page that has it, if any is
broken; 0 otherwise.
"""

import html.parser
import os
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)


def parse(path, cache):
    if path not in cache:
        page = Page()
        with open(path, encoding="utf-8") as f:
            page.feed(f.read())
        cache[path] = page
    return cache[path]


def broken_links(book):
    book = os.path.abspath(book)
    cache = {}
    broken = []
    pages = []
    for root, _, files in os.walk(book):
        pages += [os.path.join(root, f) for f in files if f.endswith(".html") and f != "404.html"]
    for path in sorted(pages):
        for link in parse(path, cache).links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or url.netloc:
                continue  # external: not checked
            target = path
            if url.path:
                if url.path.startswith("/"):
                    broken.append((path, link, "absolute path: use a relative link"))
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not target.startswith(book + os.sep) and target != book:
                    broken.append((path, link, "outside the book"))
                    continue
                if not os.path.isfile(target):
                    broken.append((path, link, "no such file"))
                    continue
            if url.fragment:
                if not target.endswith(".html"):
                    continue
                if urllib.parse.unquote(url.fragment) not in parse(target, cache).ids:
                    broken.append((path, link, "no such anchor"))
    return len(pages), broken


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    book = sys.argv[1]
    if not os.path.isfile(os.path.join(book, "index.html")):
        sys.exit(f"{book}: no index.html; build the book first (mdbook build docs -d {book})")
    count, broken = broken_links(book)
    for page, link, why in broken:
        print(f"{os.path.relpath(page, book)}: {link}: {why}")
    if broken:
        print(f"{len(broken)} broken link(s) in {count} pages")
        sys.exit(1)
    print(f"{count} pages, every relative link and anchor resolves (external links not checked)")


if __name__ == "__main__":
    main()
