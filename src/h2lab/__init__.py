"""h2lab: a web-performance lab in one command."""

__version__ = "0.10.0"
