"""Store: what a run leaves on disk and what reads it back without Lightning: result records,
run directories and their lock, continuing a finished run, the archive `runs/` kept with the
repository, and the upgrade map that reads an older run's record as today's (upgrade.py). A leaf:
it imports nothing else of the package.
"""
