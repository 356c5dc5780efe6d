"""longterm's Hydra plugins: `launcher=parallel` (parallel_launcher.py), `launcher=packed`
(packed_launcher.py), and the sweeper every multirun uses (sweeper.py)."""
