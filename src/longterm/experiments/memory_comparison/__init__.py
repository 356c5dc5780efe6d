"""Every architecture on the paper's two problems and on order, state and recall at T0 = 50: the
experiment conf/experiment/memory_comparison.yaml, its page docs/memory_comparison.md.

    python src/train.py experiment=memory_comparison     # and the command after it in the conf
    python -m longterm.experiments.memory_comparison.page outputs/memory_comparison \
        --out docs/memory_comparison.md

page.py writes the page's tables (its COMMANDS: the runs' commands).
"""
