"""Self-play training and evaluation for liars-dice (PyTorch)."""
