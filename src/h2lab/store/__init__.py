"""The results store of an experiment: ``DIR/results.sqlite`` plus ``DIR/artifacts/``."""

from h2lab.store.sqlite import Store

__all__ = ["Store"]
