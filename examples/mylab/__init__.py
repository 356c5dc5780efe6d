"""A researcher's own package: a GRU encoder and an order-dependent task, plugged into longterm
by import path (conf/model/gru.yaml, conf/task/ordered_difference.yaml). See examples/README.md."""
