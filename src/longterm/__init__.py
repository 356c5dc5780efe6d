"""Long-term memory problems: tasks, models and experiments."""
