"""The published numbers the collector sets beside ours (Raffel & Ellis 2015, arXiv 1512.08756).

Table 1: epochs to 100% validation accuracy with the best learning rate in {3e-4, 1e-3, 3e-3,
1e-2}; a float is the accuracy after the 100-epoch limit (greyed out in the paper). §2.3: accuracy
after 100 epochs of variable-length training (lengths 50..10000). One run each, no seeds.
"""

T0S = (50, 100, 500, 1000, 5000, 10000)
# The paper's protocol (§2.2): epochs of 1000 updates, validation on 1000 sequences. A cell of
# ours is set beside the paper's value only when its runs followed it.
PROTOCOL = {"batches_per_epoch": 1000, "val_size": 1000}
LEARNING_RATES = (3e-4, 1e-3, 3e-3, 1e-2)
EPOCH_LIMIT = 100

# (task, pool) -> {T0: epochs (int) or accuracy after the limit (float)}
TABLE1: dict[tuple[str, str], dict[int, int | float]] = {
    ("addition", "attention"): dict(zip(T0S, (1, 1, 1, 1, 2, 3), strict=True)),
    ("addition", "mean"): dict(zip(T0S, (1, 1, 1, 2, 8, 17), strict=True)),
    ("multiplication", "attention"): dict(zip(T0S, (1, 2, 4, 2, 15, 6), strict=True)),
    ("multiplication", "mean"): dict(zip(T0S, (2, 2, 8, 33, 0.898, 0.808), strict=True)),
}

# (task, pool) -> accuracy on the 1000-sequence test set after 100 epochs
VARIABLE_LENGTH: dict[tuple[str, str], float] = {
    ("addition", "attention"): 0.999,
    ("multiplication", "attention"): 0.994,
    ("addition", "mean"): 0.774,
    ("multiplication", "mean"): 0.555,
}
