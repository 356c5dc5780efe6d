"""Sweeps: what exists because there are many runs: packs (runs of one cell trained in one
process), stacked members on an accelerator, the multirun's record and closing table, and the
channel by which a job's failure reaches the end of the sweep.
"""
