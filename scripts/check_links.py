#!/usr/bin/env python3
"""Checks the relative links and anchors of blq's Markdown pages, offline.

What it is for: the README and docs/*.md link to each other, to headings
(#anchors) and to source files; a page moved or a heading renamed breaks
those links without a word. scripts/test.sh runs this as one check.

    scripts/check_links.py [--root DIR] [FILE.md ...]

With no FILE it checks DIR/README.md and DIR/docs/*.md (DIR: the checkout
this script is in). For every link and image, [text](target) and
![alt](target), and every reference definition, [ref]: target:
  - http:, https: and mailto: links are not checked (no network here);
    any other scheme is reported;
  - a relative target (to the page's folder; one starting with / to DIR)
    must be a file or folder inside DIR;
  - an anchor on a Markdown page (#x on the same page, page.md#x) must be
    the GitHub slug of one of that page's headings (lower case, punctuation
    but - and _ dropped, spaces to -, -1, -2 ... on repeats) or an HTML
    id/name;
  - a link into any other file may carry no anchor but a line, #L12 or
    #L12-L20; a folder, none.
Links inside fenced code blocks and `code spans` are not links.

Each broken link is printed as "FILE:LINE: TARGET: reason"; then one line
"check_links: N links in M pages, K broken". Exit status: 0 none broken,
1 some broken, 2 a page to check cannot be read. Python 3 standard library
only.
"""

import argparse
import difflib
import glob
import os
import re
import sys
import urllib.parse

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# A code span on one paragraph: a run of backticks, text without a blank
# line, the same run.
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
# [text](target) or [text](<target> "title"); the text may span lines and
# hold one level of brackets.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
HTML_ID = re.compile(r"<[a-zA-Z][^>]*\s(?:id|name)\s*=\s*[\"']([^\"']+)[\"']")
LINE_ANCHOR = re.compile(r"^L\d+(?:-L\d+)?$")
IGNORED_SCHEMES = ("http", "https", "mailto")


def blank(text, start, end):
    """text with [start, end) replaced by spaces, newlines kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_code(text):
    """The page with fenced blocks and code spans blanked (line numbers kept)."""
    lines = text.split("\n")
    fence = None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
                lines[i] = ""
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not m.group(2).strip():
                fence = None
            lines[i] = ""
    text = "\n".join(lines)
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                         # \w: letters, digits, _
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors a Markdown page makes: its headings' slugs and HTML ids."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    fence = None
    titles = []
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        h = ATX.match(line)
        if h:
            titles.append(h.group(2) or "")
        elif SETEXT.match(line) and i > 0 and lines[i - 1].strip() \
                and not ATX.match(lines[i - 1]) and "|" not in lines[i - 1]:
            titles.append(lines[i - 1].strip())
    seen = {}
    found = set(HTML_ID.findall(text))
    for t in titles:
        s = slug(t)
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    cache[path] = found
    return found


def links(text):
    """(line, target) for every link and reference definition of a page."""
    text = strip_code(text)
    for m in INLINE.finditer(text):
        yield text.count("\n", 0, m.start(1)) + 1, m.group(1)
    for m in REF_DEF.finditer(text):
        yield text.count("\n", 0, m.start(1)) + 1, m.group(1)


def problem(root, page, target):
    """Why target, linked from page, is broken; None when it is fine."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if not target:
        return "empty link"
    scheme = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):", target)
    if scheme:
        if scheme.group(1).lower() in IGNORED_SCHEMES:
            return None
        return f"unsupported scheme '{scheme.group(1)}:' (only relative links, http(s) and mailto)"
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path.split("?", 1)[0])
    anchor = urllib.parse.unquote(anchor)
    if path == "":
        dest = page
    elif path.startswith("/"):
        dest = os.path.normpath(os.path.join(root, path.lstrip("/")))
    else:
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path))
    rel = os.path.relpath(dest, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        return "leaves the repository"
    if not os.path.exists(dest):
        return f"no such file or folder: {rel}"
    if "#" not in target:
        return None
    if os.path.isdir(dest):
        return f"{rel} is a folder: a link to it can carry no anchor"
    if not dest.endswith(".md"):
        if LINE_ANCHOR.match(anchor):
            return None
        return f"a link into {rel} may carry no anchor but a line (#L12 or #L12-L20)"
    try:
        have = anchors(dest)
    except (OSError, UnicodeDecodeError) as e:
        return f"cannot read {rel}: {e}"
    if anchor in have:
        return None
    near = difflib.get_close_matches(anchor, sorted(have), n=1)
    hint = f"; did you mean #{near[0]}?" if near else ""
    return f"no heading of {rel} makes the anchor #{anchor}{hint}"


def main(argv):
    ap = argparse.ArgumentParser(description="Check the relative links and anchors of "
                                             "README.md and docs/*.md.")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the checkout (default: the one this script is in)")
    ap.add_argument("pages", nargs="*", metavar="FILE.md",
                    help="pages to check (default: ROOT/README.md and ROOT/docs/*.md)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    pages = [os.path.abspath(p) for p in args.pages] or \
        [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    total = broken = 0
    for page in pages:
        shown = os.path.relpath(page, root)
        try:
            with open(page, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            print(f"check_links: cannot read {shown}: {e}", file=sys.stderr)
            return 2
        for line, target in links(text):
            total += 1
            why = problem(root, page, target)
            if why:
                broken += 1
                print(f"{shown}:{line}: {target}: {why}")
    print(f"check_links: {total} links in {len(pages)} pages, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
