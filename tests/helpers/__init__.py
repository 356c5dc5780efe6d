"""What the tests share besides pytest's fixtures (those are tests/conftest.py's): the repository's
paths (paths.py), the quick-run presets (presets.py), running the entry points (runs.py) through
the fork server (fork_client.py, forkserver.py), reading what runs wrote (results.py), composing
the real configs (configs.py) and holding a run to signal it part-way through (hold.py). Test
files import them as `from helpers.<module> import ...` (tests/ is on sys.path, as pytest puts a
test file's folder there)."""
