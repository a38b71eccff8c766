"""Stored trials as columns: one numpy array per field, one row per stored attempt (warm-ups
left out, in id order, as :meth:`Store.trials` gives them). The analysis and the report take
this instead of a list of :class:`TrialRecord` when a store holds a million trials (issue #43:
a :class:`TrialRecord` per row took 59 s and 3.4 GiB to load a million; the columns take a few
seconds and a few hundred MB). Pure: numpy only; :func:`h2lab.store.columns.read_trial_frame`
fills one from a store, :meth:`TrialFrame.of` from records (the tests' way, and small lists).

Text columns are :class:`Texts`: codes into the sorted distinct values, so comparing codes
compares the texts (the analysis orders blocks by their text). Numbers are float64 with NaN
for NULL (every stored integer here is far below 2**53, so none loses a digit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from h2lab.results import METRICS, OK, TrialRecord
from h2lab.spec.factors import Cell
from h2lab.store.sqlite import row_of

TEXT_COLUMNS = (
    "trial_key",
    "block",
    "protocol",
    "status",
    "experiment",
    "page_digest",
    "config_json",
    "versions_json",
    "machine",
)
NUMBER_COLUMNS = (
    "id",
    "attempt",
    "seed",
    *(m.name for m in METRICS),
    "cpu_busy_pct",
    "cpu_saturated",
    "emulator_drops",
    "warmup",
)
"""The columns a frame holds besides the cell (the factor columns): what the report reads of
every trial. The rest of a row (started_at, error, ...) is read per trial when shown."""
EXACT_COLUMNS = frozenset({"seed"})
"""Kept as 64-bit integers: a trial's seed is any 64-bit value, and a float64 holds integers
only up to 2^53 exactly (two seeds would fall together)."""


def _numbers(values: Sequence[float | int | None], column: str) -> np.ndarray:
    if column in EXACT_COLUMNS and all(v is not None for v in values):
        return np.array(values, np.int64)
    return np.array([np.nan if v is None else v for v in values], float)


@dataclass(frozen=True)
class Texts:
    """A text column: ``values[codes[i]]`` is row i's text (None: NULL)."""

    values: tuple[str | None, ...]
    """the distinct texts, None first, then sorted"""
    codes: np.ndarray

    @classmethod
    def of(cls, items: Sequence[str | None]) -> Texts:
        distinct = sorted({x for x in items if x is not None})
        values: tuple[str | None, ...] = (
            (None, *distinct) if any(x is None for x in items) else tuple(distinct)
        )
        index = {v: i for i, v in enumerate(values)}
        return cls(values, np.fromiter((index[x] for x in items), np.int64, len(items)))

    def take(self, rows: np.ndarray) -> Texts:
        return Texts(self.values, self.codes[rows])

    def at(self, row: int) -> str | None:
        return self.values[int(self.codes[row])]

    def texts(self) -> list[str | None]:
        """Every row's text."""
        return [self.values[c] for c in self.codes.tolist()]

    def code_of(self, text: str | None) -> int:
        """The code of ``text``; -1 when no row has it."""
        try:
            return self.values.index(text)
        except ValueError:
            return -1


@dataclass(frozen=True)
class TrialFrame:
    cells: tuple[Cell, ...]
    """the distinct cells"""
    cell: np.ndarray
    """each row's index into :attr:`cells`"""
    texts: Mapping[str, Texts]
    """one per :data:`TEXT_COLUMNS`"""
    numbers: Mapping[str, np.ndarray]
    """one per :data:`NUMBER_COLUMNS`, float64, NaN for NULL (:data:`EXACT_COLUMNS`: int64
    when none is NULL)"""

    def __len__(self) -> int:
        return len(self.cell)

    @classmethod
    def of(cls, records: Iterable[TrialRecord]) -> TrialFrame:
        """The frame of ``records``, in their order: their columns as the store would hold
        them (the JSON columns as text, flags as 0/1)."""
        listed = list(records)
        rows = [row_of(t) for t in listed]
        cells: dict[Cell, int] = {}
        cell = np.fromiter(
            (cells.setdefault(t.cell, len(cells)) for t in listed), np.int64, len(rows)
        )
        texts = {c: Texts.of([r[c] for r in rows]) for c in TEXT_COLUMNS}
        numbers = {c: _numbers([r[c] for r in rows], c) for c in NUMBER_COLUMNS}
        numbers["id"] = np.nan_to_num(numbers["id"], nan=0.0)  # a record not stored: id 0
        return cls(tuple(cells), cell, texts, numbers)

    def take(self, rows: np.ndarray) -> TrialFrame:
        """The frame of ``rows`` (indices or a mask), in that order."""
        return TrialFrame(
            self.cells,
            self.cell[rows],
            {c: t.take(rows) for c, t in self.texts.items()},
            {c: v[rows] for c, v in self.numbers.items()},
        )

    def text(self, column: str) -> Texts:
        return self.texts[column]

    def number(self, column: str) -> np.ndarray:
        return self.numbers[column]

    @property
    def ok(self) -> np.ndarray:
        """Rows whose attempt succeeded."""
        ok: np.ndarray = self.texts["status"].codes == self.texts["status"].code_of(OK)
        return ok

    def cell_levels(self, name: str) -> np.ndarray:
        """Each row's level of factor ``name`` (an object array)."""
        levels = np.array([c[name] for c in self.cells] + [None], dtype=object)[:-1]
        return levels[self.cell] if len(self.cells) else np.array([], dtype=object)

    def chosen(self, *, ok_only: bool) -> np.ndarray:
        """One row per trial key: its latest successful attempt (the first stored of equal
        attempts), else, unless ``ok_only``, its latest attempt. In the order of the keys'
        first rows."""
        n = len(self)
        if not n:
            return np.zeros(0, np.int64)
        key = self.texts["trial_key"].codes
        ok = self.ok
        pos = np.arange(n)
        order = np.lexsort((-pos, self.numbers["attempt"], ok, key))
        last = np.r_[key[order][1:] != key[order][:-1], True]
        rows = order[last]
        first = np.full(int(key.max()) + 1, n)
        np.minimum.at(first, key, pos)
        rows = rows[np.argsort(first[key[rows]], kind="stable")]
        return rows[ok[rows]] if ok_only else rows

    def latest_ok(self) -> TrialFrame:
        """:func:`h2lab.analysis.verdict.latest_ok` of the frame: the chosen successful rows,
        by id (then trial key)."""
        rows = self.chosen(ok_only=True)
        order = np.lexsort((self.texts["trial_key"].codes[rows], self.numbers["id"][rows]))
        return self.take(rows[order])


TrialsIn = Iterable[TrialRecord] | TrialFrame
"""What the analysis and the report take: records, or a frame of them."""


def as_frame(trials: TrialsIn) -> TrialFrame:
    return trials if isinstance(trials, TrialFrame) else TrialFrame.of(trials)
