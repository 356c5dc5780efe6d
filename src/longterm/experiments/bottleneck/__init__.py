"""The fixed-state bottleneck (docs/bottleneck/README.md): recall of a token from a state of d
numbers against attention, simulated without training (no conf/experiment file).

    python -m longterm.experiments.bottleneck.page   # measure; write docs/bottleneck/

measure.py holds the protocol and the measurement, figure.py the plot, page.py the page.
"""
