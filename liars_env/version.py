"""The package version, in one place (``liars_env.__version__`` and checkpoints read it)."""

__version__ = "0.2.0"
