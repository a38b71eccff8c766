"""The module index of docs/architecture.md: every module of ``src/h2lab`` with its one-line
purpose, the first sentence of its docstring.

    python -m h2lab.module_index            # print the index
    python -m h2lab.module_index --write    # put it into docs/architecture.md (a checkout's)

``make reference`` writes it; tests/unit/test_architecture.py fails when a module is missing
from it, or has no docstring to take its purpose from.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
DOC = PACKAGE.parents[1] / "docs" / "architecture.md"
"""docs/architecture.md of the checkout this package runs from (``make reference``)."""
BEGIN = "<!-- module index: made by python -m h2lab.module_index, do not edit by hand -->"
END = "<!-- end of the module index -->"
PURPOSE_CHARS = 160


def modules(package: Path = PACKAGE) -> list[Path]:
    """Every ``.py`` file of the package, in path order."""
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def purpose(path: Path) -> str:
    """The first sentence of the module's docstring, on one line; "" without one."""
    doc = ast.get_docstring(ast.parse(path.read_text()), clean=True) or ""
    text = " ".join(doc.split("\n\n", 1)[0].split())
    first = re.split(r"(?<=[.])\s(?=[A-Z`])", text, maxsplit=1)[0]
    return first if len(first) <= PURPOSE_CHARS else first[: PURPOSE_CHARS - 1] + "…"


def index(package: Path = PACKAGE) -> str:
    """The index as a Markdown table between its markers."""
    rows = [
        f"| `{p.relative_to(package)}` | {purpose(p).replace('|', '/')} |" for p in modules(package)
    ]
    return "\n".join([BEGIN, "", "| module | purpose |", "| --- | --- |", *rows, "", END])


def with_index(doc: str, table: str) -> str:
    """``doc`` with its index replaced by ``table`` (appended when it has none)."""
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        return head + table + rest.split(END, 1)[1]
    return doc.rstrip("\n") + "\n\n## Every module\n\n" + table + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/architecture.md")
    args = parser.parse_args()
    table = index()
    if args.write:
        DOC.write_text(with_index(DOC.read_text(), table))
    else:
        sys.stdout.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
