"""longterm's Hydra launcher plugins: `launcher=parallel` (parallel_launcher.py)."""
