"""Analysis: reads finished runs (their result.json and TensorBoard events) and writes tables and
plots. Imports the training core only to read its records; `evaluate` is the one module that
loads a checkpoint, and with it Lightning."""
