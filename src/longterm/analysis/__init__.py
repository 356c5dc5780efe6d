"""Analysis: what the experiments (experiments/) and the paper's collector share. Reads finished
runs (their result.json and TensorBoard events): the readers, each seed's best learning rate and
the spread over seeds, the checks pages' verdict rule (plateau), provenance, and the collector of
the paper's tables and plots. Imports the training core only to read its records, and nothing of
experiments/; `evaluate` is the one module that loads a checkpoint, and with it Lightning."""
