"""longterm's Hydra launcher plugins: `launcher=parallel` (parallel_launcher.py) and
`launcher=packed` (packed_launcher.py)."""
