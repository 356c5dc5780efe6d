"""Recall against state size on multi-query associative recall (zoology's Figure 2): the
experiment conf/experiment/recall.yaml, its page docs/recall.md.

    python -m longterm.experiments.recall.runs           # the sweep's races (--run runs them)
    python -m longterm.experiments.recall.page runs/recall --out docs/recall.md

runs.py plans the races, page.py writes the page and its figure, checks.py holds the published
statements and their verdicts, settings.py where the settings differ from zoology's.
"""
