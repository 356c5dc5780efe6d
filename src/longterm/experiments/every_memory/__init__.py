"""The paper's problems across every memory (Raffel & Ellis 2015, Table 1): the experiment
conf/experiment/every_memory.yaml, its page docs/every_memory.md.

    python -m longterm.experiments.every_memory.runs     # the races' commands (--run runs them)
    python -m longterm.experiments.every_memory.page runs/every_memory runs/table1 \\
        runs/table1_long --out docs/every_memory.md

runs.py plans the races, page.py writes the page, rule.py holds what its runs can show (the
verdicts, the differences from the paper's protocol), figure.py draws the page's figure.
"""
