"""The contract check of a user's plugin (docs/plugins.md, "The contract check"): an encoder, a
readout and a task generator run on small inputs, to see that each does what the framework needs
to train, pool, log and compare it as a built-in. It runs small models (torch); configuration
lives in config/, which it uses.

    encoder.encoder_report(encoder, in_features, dim, keys)   -> Report
    readout.readout_report(pool section, dim)                 -> Report
    task.task_report(task section, min_length)                -> Report

`report` holds the Report every check writes to; `probes` the small batch and comparisons the
encoder's and the readout's checks share; `step_form` the step form's checks, which both run.
`python src/contract.py [overrides]` composes a config as src/train.py does (`--config-dir` too)
and prints the three reports; the tests run them on every built-in model, readout and task.
"""
