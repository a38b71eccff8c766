"""Closed vocabularies: each is a ``Literal`` type beside the tuple of its values (a protocol
name, a view, ``fail_on``, a capture, a trial's status, who reports a metric), kept next to
what it names. A literal rather than an enum because the values travel as they are written:
in experiment files, trial keys, store columns, JSON on the wire and in exports, where an
enum would be converted at every one of those edges. mypy then refuses a comparison with a
value outside the vocabulary. Text read from outside becomes one with :func:`member`."""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V", bound=str)


def member(values: tuple[V, ...], text: object) -> V | None:
    """The value of ``values`` (a vocabulary's tuple) equal to ``text``; None when there is
    none. Returns the tuple's own item, typed as the vocabulary."""
    for value in values:
        if text == value:
            return value
    return None


def one_of(values: tuple[V, ...], text: object, what: str) -> V:
    """:func:`member`, or ValueError naming ``what`` (a column, a key) when ``text`` is
    outside the vocabulary."""
    value = member(values, text)
    if value is None:
        raise ValueError(f"{what} {text!r} is not one of {', '.join(values)}")
    return value
