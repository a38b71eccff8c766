"""The results store of an experiment: ``DIR/results.sqlite`` plus ``DIR/artifacts/``."""

from h2lab.store.sqlite import Store, TrialRecord

__all__ = ["Store", "TrialRecord"]
