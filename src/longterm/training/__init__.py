"""Training: one run. `run` is the driver (claim the directory, build, fit, record); `parts`
builds what `Trainer.fit` is given (data, model, callbacks, logger, trainer); `checkpoints` says
which checkpoint a run resumes from, how one is written and which is the best; `result` is the
run's result.json; `tensorboard` all a run writes to TensorBoard (logger, HPARAMS), `loggers` the
other loggers it may choose (CSV); beside them the LightningModule, the data, the callbacks, what
the terminal shows, and the one module that calls Lightning's private API.
"""
