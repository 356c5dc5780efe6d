"""The Markdown pages point at what exists: every relative link resolves to a file or folder, and
every `longterm.` module path and `longterm/` file path names one in src/longterm. Reads the
files only; imports nothing of the package."""

import ast
import re
from pathlib import Path

import pytest
from helpers.paths import ROOT

PACKAGE = ROOT / "src" / "longterm"
PAGES = sorted(
    [ROOT / "README.md", ROOT / "runs" / "README.md", ROOT / "examples" / "README.md"]
    + list((ROOT / "docs").rglob("*.md"))
)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOTTED = re.compile(r"(?<![\w./-])longterm(?:\.\w+)+")
SLASHED = re.compile(r"(?<![\w.-])(?:src/)?longterm/[\w/]*\w(?:\.\w+)?/?")


def page_ids(pages):
    return [str(p.relative_to(ROOT)) for p in pages]


def prose(text: str) -> str:
    """The text without fenced code blocks (examples of output, not links)."""
    return FENCE.sub("", text)


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def top_level_names(module: Path) -> set[str]:
    """Names a module defines or imports at its top level."""
    names = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def dotted_error(path: str) -> str | None:
    """Why `longterm.a.b.name` names nothing in src/longterm; None if it names a package, a
    module, or a module's top-level name (an attribute after that is not checked)."""
    here, parts = PACKAGE, path.split(".")[1:]
    for i, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        if (here / f"{part}.py").is_file():
            module = here / f"{part}.py"
            rest = parts[i + 1 :]
            if rest and rest[0] not in top_level_names(module):
                return f"{path}: {module.relative_to(ROOT)} has no {rest[0]!r}"
            return None
        if (here / "__init__.py").is_file() and part in top_level_names(here / "__init__.py"):
            return None
        return f"{path}: no module {'.'.join(['longterm', *parts[: i + 1]])}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=page_ids(PAGES))
def test_module_paths_exist(page):
    text = page.read_text()
    errors = [e for p in sorted(set(DOTTED.findall(text))) if (e := dotted_error(p))]
    for path in sorted(set(SLASHED.findall(text))):
        if not (PACKAGE.parent / path.removeprefix("src/")).exists():
            errors.append(f"{path}: no such file or folder")
    assert not errors, f"{page.relative_to(ROOT)}: " + "; ".join(errors)


def test_the_docs_index_links_every_page():
    """docs/README.md links every page of docs/ and each subfolder's README.md."""
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.split("#")[0]).resolve() for t in LINK.findall(index.read_text())}
    pages = set((ROOT / "docs").glob("*.md")) | set((ROOT / "docs").glob("*/README.md"))
    missing = sorted(str(p.relative_to(ROOT)) for p in pages - {index} if p.resolve() not in linked)
    assert not missing, f"docs/README.md does not link {missing}"
