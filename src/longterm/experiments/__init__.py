"""Experiments, one folder each (its runs, page, checks and figure; the folder's docstring names
its conf/experiment file, its page in docs/ and its commands), and the drivers they share: the
learning-rate race (lr_race), the queue that runs the planners' commands (command_queue), the
hours a queue has left (race_hours) and the time an update takes (update_time)."""
