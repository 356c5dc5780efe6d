"""Recall against state size on multi-query associative recall: the experiment
conf/experiment/recall.yaml, its page docs/recall.md; and zoology's Figure 2 in its own recipe,
conf/experiment/zoology_figure2.yaml, its page docs/zoology_figure2.md.

    python -m longterm.experiments.recall.runs           # the sweep's races (--run runs them)
    python -m longterm.experiments.recall.page runs/recall --out docs/recall.md
    python -m longterm.experiments.recall.figure2        # Figure 2's runs left (--run runs them)
    python -m longterm.experiments.recall.page runs/zoology_figure2 --out docs/zoology_figure2.md

runs.py plans the races, figure2.py Figure 2's grid; page.py writes either page (figure2_page.py
its Figure 2 parts), plot.py its figure, unfinished.py its runs in progress; checks.py holds the
published statements and their verdicts, settings.py where the settings differ from zoology's.
"""
