"""docs/architecture.md names every module of h2lab with its purpose, and no file of the
repository cites a document the repository does not hold."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from h2lab import module_index

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("STYLE.md", "DESIGN.md", "../shared/")
"""Documents of the project's makers that live outside the repository: a reader of the
repository cannot open them, so nothing in it may send them there."""


def test_every_module_is_in_the_index_with_a_purpose() -> None:
    doc = module_index.DOC.read_text()
    missing = [
        str(p.relative_to(module_index.PACKAGE))
        for p in module_index.modules()
        if f"| `{p.relative_to(module_index.PACKAGE)}` |" not in doc
    ]
    assert missing == [], "run make reference: docs/architecture.md lacks these modules"
    no_purpose = [
        str(p.relative_to(module_index.PACKAGE))
        for p in module_index.modules()
        if not module_index.purpose(p)
    ]
    assert no_purpose == [], "these modules have no docstring to say what they are for"
    assert module_index.index() in doc, "run make reference: the module index is out of date"


def test_the_index_is_replaced_in_place(tmp_path: Path) -> None:
    doc = f"# A\n\n{module_index.BEGIN}\nold\n{module_index.END}\n\n## B\n"
    assert module_index.with_index(doc, "NEW") == "# A\n\nNEW\n\n## B\n"
    assert module_index.with_index("# A\n", "NEW") == "# A\n\n## Every module\n\nNEW\n"


def test_no_file_cites_a_document_outside_the_repository() -> None:
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    here = str(Path(__file__).relative_to(ROOT))
    citing = []
    for name in tracked:
        path = ROOT / name
        if name == here or not path.is_file() or path.suffix in {".png", ".gz", ".warc", ".jpg"}:
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        citing += [f"{name}: {cited}" for cited in OUTSIDE if cited in text]
    assert citing == []


MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _python_files() -> list[Path]:
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in tracked if (ROOT / name).is_file()]


def test_files_and_functions_stay_small() -> None:
    """Files under 600 lines and functions under 80 (CONTRIBUTING.md): a longer one is split
    along its jobs."""
    long_files, long_functions = [], []
    for path in _python_files():
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if text.count("\n") > MAX_FILE_LINES:
            long_files.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long_functions.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    assert long_files == [] and long_functions == []
