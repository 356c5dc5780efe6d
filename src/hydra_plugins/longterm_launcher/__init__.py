"""longterm's Hydra plugins: `launcher=parallel` (parallel_launcher.py), `launcher=packed`
(packed_launcher.py), packs inside submitit's jobs for `launcher=slurm|submitit_local`
(submitit_packed.py), and the sweeper every multirun uses (sweeper.py)."""
