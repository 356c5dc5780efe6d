"""The MAD protocol (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid Architectures",
arXiv 2403.17844, §3; athms/mad-lab): a model's MAD scores on the six synthetic tasks, each at
its baseline and harder settings, on mad-lab's data and in mad-lab's recipe
(conf/experiment/mad.yaml), its page docs/mad.md.

    python -m longterm.experiments.mad.runs --model mad_attention       # the protocol's commands
    python -m longterm.experiments.mad.page outputs/mad --out docs/mad.md

runs.py plans the runs (every task x setting, each a multirun over the lr x weight decay grid),
page.py writes the page: per setting the best test accuracy over the grid, per task the MAD
score (their mean), the scores' mean, the state size beside.
"""
