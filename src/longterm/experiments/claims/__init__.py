"""The papers' claims tested on small runs: the experiments conf/experiment/claims.yaml and
conf/experiment/selection.yaml (the Mamba paper's rows), their page docs/claims.md.

    python -m longterm.experiments.claims.runs           # the claims sweep's commands (--run)
    python -m longterm.experiments.claims.runs --time 30 # seconds per update of every job kind
    python -m longterm.experiments.claims.page runs/claims runs/selection --out docs/claims.md

runs.py plans the claims sweep, page.py writes the page, verdicts.py holds the rule every row is
judged by, selection.py the Mamba paper's rows.
"""
