"""What the environment is made of: every package the code imports (src/, tests/, bench/,
examples/, scripts/) is declared in pyproject.toml, pinned, and requirements.lock, which `make`
installs, holds each declared pin and torch's CPU build. Reads the files and the installed
packages' metadata only."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from helpers.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCK = ROOT / "requirements.lock"
CODE = ("src", "tests", "bench", "examples", "scripts")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(line: str) -> tuple[str, str]:
    """(canonical name, pinned version) of `name==version`."""
    name, _, version = line.partition("==")
    return canonical(re.split(r"[\s\[;]", name.strip())[0]), version.strip()


DECLARED = dict(
    requirement(r)
    for r in PYPROJECT["dependencies"]
    + [r for extra in PYPROJECT["optional-dependencies"].values() for r in extra]
)


def imported_modules() -> dict[str, str]:
    """Each top-level module imported from outside the project -> a file importing it: not the
    standard library, not the package, not a module beside the file (bench/'s and tests/' own)."""
    found = {}
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in (n.split(".")[0] for n in names):
                    beside = (path.parent / f"{top}.py").exists() or (path.parent / top).is_dir()
                    mine = top in ("longterm", "hydra_plugins", "helpers", "mylab") or beside
                    if top not in sys.stdlib_module_names and not mine:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared_and_pinned():
    providers = packages_distributions()
    undeclared = []
    for module, where in sorted(imported_modules().items()):
        dists = {canonical(d) for d in providers.get(module, [module])}
        if not dists & set(DECLARED):
            undeclared.append(f"{module} ({where}; from {sorted(dists)})")
    assert not undeclared, f"imported but not in pyproject.toml: {undeclared}"
    unpinned = [r for r in PYPROJECT["dependencies"] if "==" not in r]
    assert not unpinned, f"not pinned: {unpinned}"


def test_the_lock_holds_every_pin_and_torchs_cpu_build():
    locked = dict(
        requirement(line) for line in LOCK.read_text().splitlines() if "==" in line.split("#")[0]
    )
    wrong = {
        name: (version, locked.get(name))
        for name, version in DECLARED.items()
        if name != "mamba-ssm" and (locked.get(name) or "").split("+")[0] != version
    }
    assert not wrong, f"pyproject.toml's pin and requirements.lock differ (make lock): {wrong}"
    assert locked["torch"].endswith("+cpu"), locked["torch"]
    assert not [name for name in locked if name.startswith("nvidia-")]
