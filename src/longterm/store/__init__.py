"""Store: what a run leaves on disk and what reads it back without Lightning: result records,
run directories and their lock, continuing a finished run, and the archive `runs/` kept with the
repository. A leaf: it imports nothing else of the package.
"""
