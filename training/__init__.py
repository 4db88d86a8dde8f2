"""Self-play training of nardy evaluators (TD(lambda)); `nardy train` runs it."""
