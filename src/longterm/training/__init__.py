"""Training: one run. `run` is the driver (claim the directory, build, fit, record); `parts`
builds what `Trainer.fit` is given (data, model, callbacks, logger, trainer); `record` is the
run's result.json; beside them the LightningModule, the data, the callbacks, checkpoints, what
TensorBoard and the terminal show, and the one module that calls Lightning's private API.
"""
