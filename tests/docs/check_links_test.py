#!/usr/bin/env python3
"""Tests scripts/check_links.py, the link checker of the README and docs/.

Usage: check_links_test.py [CHECKOUT]   (scripts/test.sh runs it just before
the checker itself; default: the checkout this file is in)

It builds a tiny checkout in a temporary folder: a README.md and a
docs/page.md whose links are all good (a file, a folder, a heading on the
same page and on another, a wrapped link, a repeated heading's -1 anchor,
a line of a source file, an http link, links inside code that are not
links) plus exactly four bad ones: a missing file, a missing anchor, an
anchor on a source file that is not a line, and a link out of the
checkout. The checker must exit 1 and print exactly those four, each as
"file:line: link: reason"; with the bad lines taken out it must exit 0.
Each check prints "ok: ..." or "FAIL: ..."; the exit status is 1 if any
failed.
"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check_links.py")
failures = 0

README = """# Tiny — a `checkout` for the checker

See [the page](docs/page.md), [its section](docs/page.md#the-section-x_y),
[a folder](src/), [a line](src/a.c#L3), [a range](src/a.c#L3-L5) and
[the web](https://example.com/x#y) or [mail](mailto:a@b.c).
A [wrapped
link](docs/page.md#again-1) and ![a picture](docs/pic.svg).

```
[not a link](nowhere.md)
```

`[not a link either](nowhere.md)`

## Usage
[missing file](docs/nope.md)
[missing anchor](docs/page.md#no-such-heading)
"""

PAGE = """# Page

## The section: `x_y`!

Back to [the top](../README.md#tiny--a-checkout-for-the-checker) and
[usage](../README.md#usage), [here](#page).

## Again

## Again

[ref]: ../src/a.c
[bad anchor on a source file](../src/a.c#main)
[out of the checkout](../../elsewhere.md)
"""

WANT = [
    "README.md:16: docs/nope.md: no such file or folder: docs/nope.md",
    "README.md:17: docs/page.md#no-such-heading: no heading of docs/page.md makes the "
    "anchor #no-such-heading",
    "docs/page.md:13: ../src/a.c#main: a link into src/a.c may carry no anchor but a line "
    "(#L12 or #L12-L20)",
    "docs/page.md:14: ../../elsewhere.md: leaves the repository",
]


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def make(tmp, readme, page):
    os.makedirs(os.path.join(tmp, "docs"), exist_ok=True)
    os.makedirs(os.path.join(tmp, "src"), exist_ok=True)
    for name, text in (("README.md", readme), ("docs/page.md", page),
                       ("docs/pic.svg", "<svg/>"), ("src/a.c", "int a;\n" * 6)):
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(text)


def run(tmp):
    return subprocess.run([sys.executable, SCRIPT, "--root", tmp], capture_output=True,
                          text=True, timeout=30)


with tempfile.TemporaryDirectory() as tmp:
    make(tmp, README, PAGE)
    p = run(tmp)
    lines = p.stdout.splitlines()
    broken = [l for l in lines if not l.startswith("check_links:")]
    check(p.returncode == 1, f"broken links make it exit 1 (exit {p.returncode})")
    check(broken == WANT, "it names exactly the broken link, the broken anchor, the "
                          "source-file anchor and the escape" +
          ("" if broken == WANT else ":\n  " + "\n  ".join(broken)))
    check(lines[-1:] == ["check_links: 17 links in 2 pages, 4 broken"],
          f"the summary counts every link: {lines[-1:]}")

    # The same checkout with the four bad lines removed passes.
    good_readme = README.split("[missing file]")[0]
    good_page = PAGE.split("[bad anchor")[0]
    make(tmp, good_readme, good_page)
    p = run(tmp)
    check(p.returncode == 0 and p.stdout.strip() == "check_links: 13 links in 2 pages, 0 broken",
          f"good links pass (exit {p.returncode}: {p.stdout.strip()})")

    p = subprocess.run([sys.executable, SCRIPT, "--root", tmp, os.path.join(tmp, "gone.md")],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "cannot read gone.md" in p.stderr,
          f"a page that cannot be read is named (exit {p.returncode}: {p.stderr.strip()})")

print(f"check_links_test: {failures} failed")
sys.exit(1 if failures else 0)
