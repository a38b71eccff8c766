"""The trials of a results store as columns (:class:`~h2lab.store.frame.TrialFrame`), read as
Arrow batches (:mod:`h2lab.store.tables`) without a Python object per value: the report's view
of a million trials (issue #43).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from h2lab.spec.factors import Cell
from h2lab.store.frame import EXACT_COLUMNS, NUMBER_COLUMNS, TEXT_COLUMNS, Texts, TrialFrame
from h2lab.store.reader import _default
from h2lab.store.sqlite import FACTOR_COLUMNS, TRIAL_COLUMNS
from h2lab.store.tables import (
    again_if_run_started,
    arrow_schema,
    arrow_type,
    read_batches,
    table_columns,
)

if TYPE_CHECKING:
    import numpy as np

    # pyarrow ships no type information; it is imported when a table is read (importing it
    # imports `socket`, and the report's modules are pure: tests/unit/test_imports.py)
    import pyarrow as pa  # type: ignore[import-untyped]


def _texts(column: pa.ChunkedArray) -> Texts:
    """A text column as codes into its sorted distinct values (None first)."""
    import numpy as np
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    encoded = pc.dictionary_encode(column).combine_chunks()
    words: list[str] = encoded.dictionary.to_pylist()
    order = sorted(range(len(words)), key=words.__getitem__)
    has_null = encoded.null_count > 0
    remap = np.empty(len(words) + 1, np.int64)
    remap[order] = np.arange(len(words)) + has_null
    remap[-1] = 0  # NULL
    codes = encoded.indices.fill_null(len(words)).to_numpy(zero_copy_only=False)
    values = ((None,) if has_null else ()) + tuple(words[i] for i in order)
    return Texts(values, remap[codes])


def _cells(table: pa.Table) -> tuple[tuple[Cell, ...], np.ndarray]:
    """The distinct cells of the factor columns and each row's index into them."""
    import numpy as np
    import pyarrow.compute as pc

    key = np.zeros(table.num_rows, np.int64)
    levels = []
    for column in FACTOR_COLUMNS:
        encoded = pc.dictionary_encode(table[column]).combine_chunks()
        words = encoded.dictionary.to_pylist()
        key = key * (len(words) + 1) + encoded.indices.to_numpy(zero_copy_only=False)
        levels.append(words)
    distinct, index = np.unique(key, return_inverse=True)
    cells = []
    for k in distinct.tolist():
        codes = []
        for words in reversed(levels):
            k, code = divmod(k, len(words) + 1)
            codes.append(code)
        picked = [words[c] for words, c in zip(levels, reversed(codes), strict=True)]
        cells.append(Cell.of(**dict(zip(FACTOR_COLUMNS, picked, strict=True))))
    return tuple(cells), index.reshape(-1).astype(np.int64)


def _number(column: pa.ChunkedArray, exact: bool) -> np.ndarray:
    """A number column as float64 (NULL: NaN), or with ``exact``
    (:data:`~h2lab.store.frame.EXACT_COLUMNS`) as int64 when it has no NULL. Integers beyond
    2^53 lose their last bits as floats; the measured ones never get there (counts of bytes,
    ms), so the cast is not asked to refuse them."""
    import numpy as np
    import pyarrow as pa

    values: np.ndarray
    if exact and column.null_count == 0:
        values = column.cast(pa.int64()).to_numpy().astype(np.int64, copy=False)
    else:
        values = column.cast(pa.float64(), safe=False).to_numpy().astype(np.float64, copy=False)
    return values


def read_trial_frame(db_path: Path) -> TrialFrame:
    """The stored trials (warm-ups left out, by id) as a :class:`TrialFrame`, read in batches
    of Arrow arrays: no Python object per row. Columns an older store lacks take their
    defaults, as :func:`h2lab.store.reader.read_trials` gives them."""
    import pyarrow as pa

    have = table_columns(db_path, "trials")
    wanted = (*FACTOR_COLUMNS, *TEXT_COLUMNS, *NUMBER_COLUMNS)
    columns = {c: TRIAL_COLUMNS[c] for c in wanted}
    where = "warmup = 0" if "warmup" in have else ""
    batches = again_if_run_started(
        lambda: list(read_batches(db_path, "trials", columns, where=where, order="id", have=have))
    )
    table = pa.Table.from_batches(batches, schema=arrow_schema(columns))
    for c in set(wanted) - have:
        default = _default(c, TRIAL_COLUMNS[c], db_path)
        table = table.set_column(
            table.schema.get_field_index(c),
            c,
            pa.array([default] * table.num_rows, type=arrow_type(TRIAL_COLUMNS[c])),
        )
    cells, cell = _cells(table)
    texts = {c: _texts(table[c]) for c in TEXT_COLUMNS}
    numbers = {c: _number(table[c], c in EXACT_COLUMNS) for c in NUMBER_COLUMNS}
    return TrialFrame(cells, cell, texts, numbers)
