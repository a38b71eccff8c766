"""JSON on the wire between the driver and its executors' workers (pure: no I/O).

Dataclasses are encoded generically from their fields and decoded from their type hints
(nested frozen dataclasses, ``tuple[X, ...]``, ``X | None``, unions of plain types,
``Mapping[str, X]``, paths, enums, literals), so a field added to :class:`TrialSpec` or
:class:`TrialRecord` travels without a change here. The round trip is exact:
``decode(T, json.loads(json.dumps(encode(x)))) == x`` for every such ``x``.

A message (:data:`MESSAGES`) travels as ``{"type": <class name>, "data": <encoded>}``.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import types
import typing
from pathlib import PurePath
from typing import Any, TypeVar, cast

from h2lab.errors import H2LabError
from h2lab.runner.executor import BlockDone, BlockJob, TrialDone

T = TypeVar("T")

JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]

MESSAGES: dict[str, type[BlockJob | TrialDone | BlockDone]] = {
    cls.__name__: cls for cls in (BlockJob, TrialDone, BlockDone)
}
"""What the driver and a worker send each other, by the name that tags it."""

_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping, typing.Mapping)
_SEQUENCES = (list, collections.abc.Sequence, typing.Sequence)


class WireError(H2LabError):
    """A value that cannot be encoded, or a message that does not decode: where and why."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


def encode(value: object) -> JSON:
    """``value`` as JSON-compatible data (a dataclass: its init fields by name)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in _init_fields(type(value))}
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, collections.abc.Mapping):
        if not all(isinstance(k, str) for k in value):
            raise WireError(type(value).__name__, "only str keys travel")
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, tuple | list | frozenset | set):
        return [encode(v) for v in value]
    raise WireError(type(value).__name__, "no JSON form for this type")


def decode(cls: type[T], data: JSON) -> T:
    """The ``cls`` that :func:`encode` turned into ``data``."""
    return cast(T, _decode(cls, data, cls.__name__))


def encode_message(message: BlockJob | TrialDone | BlockDone) -> JSON:
    return {"type": type(message).__name__, "data": encode(message)}


def decode_message(data: JSON) -> BlockJob | TrialDone | BlockDone:
    if not isinstance(data, dict) or set(data) != {"type", "data"}:
        raise WireError("message", "expected {'type': ..., 'data': ...}")
    name = data["type"]
    if not isinstance(name, str) or name not in MESSAGES:
        raise WireError("message", f"unknown type {name!r} (known: {', '.join(MESSAGES)})")
    return decode(MESSAGES[name], data["data"])


@functools.cache
def _init_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.init)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(tp: Any, data: JSON, where: str) -> object:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return data
    if origin is typing.Union or origin is types.UnionType:
        return _union(args, data, where)
    if origin is typing.Literal:
        if data not in args:
            raise WireError(where, f"{data!r} is not one of {args}")
        return data
    if tp in (str, int, float, bool, type(None)):
        return _plain(tp, data, where)
    kind = origin or tp
    if kind is tuple:
        return _tuple(args, data, where)
    if kind in _SEQUENCES or kind in (frozenset, set):
        item = args[0] if args else Any
        items = (_decode(item, v, f"{where}[{i}]") for i, v in _items(data, where))
        return list(items) if kind in _SEQUENCES else kind(items)
    if kind in _MAPPINGS:
        value = args[1] if args else Any
        return {k: _decode(value, v, f"{where}[{k!r}]") for k, v in _object(data, where).items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, data, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return tp(str(_plain(str, data, where)))
    raise WireError(where, f"cannot decode type {tp!r}")


def _plain(tp: type, data: JSON, where: str) -> object:
    """A plain value, kept as it came: an int in a float field stays the int it was."""
    ok = {
        str: isinstance(data, str),
        bool: isinstance(data, bool),
        int: isinstance(data, int) and not isinstance(data, bool),
        float: isinstance(data, int | float) and not isinstance(data, bool),
        type(None): data is None,
    }[tp]
    if not ok:
        raise WireError(where, f"expected {tp.__name__}, got {type(data).__name__}")
    return data


def _union(args: tuple[Any, ...], data: JSON, where: str) -> object:
    if data is None and type(None) in args:
        return None
    reasons = []
    for arm in args:
        if arm is type(None):
            continue
        try:
            return _decode(arm, data, where)
        except WireError as exc:
            reasons.append(exc.reason)
    raise WireError(where, "; ".join(reasons) or "no arm of the union fits")


def _tuple(args: tuple[Any, ...], data: JSON, where: str) -> tuple[object, ...]:
    items = list(_items(data, where))
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        item = args[0] if args else Any
        return tuple(_decode(item, v, f"{where}[{i}]") for i, v in items)
    if len(items) != len(args):
        raise WireError(where, f"expected {len(args)} items, got {len(items)}")
    return tuple(_decode(a, v, f"{where}[{i}]") for a, (i, v) in zip(args, items, strict=True))


def _dataclass(cls: type, data: JSON, where: str) -> object:
    values = _object(data, where)
    fields = _init_fields(cls)
    unknown = set(values) - {f.name for f in fields}
    if unknown:
        raise WireError(where, f"unknown field {sorted(unknown)[0]!r} of {cls.__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in fields:
        if f.name in values:
            kwargs[f.name] = _decode(hints[f.name], values[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise WireError(where, f"missing field {f.name!r} of {cls.__name__}")
    return cls(**kwargs)


def _items(data: JSON, where: str) -> list[tuple[int, JSON]]:
    if not isinstance(data, list):
        raise WireError(where, f"expected a list, got {type(data).__name__}")
    return list(enumerate(data))


def _object(data: JSON, where: str) -> dict[str, JSON]:
    if not isinstance(data, dict):
        raise WireError(where, f"expected an object, got {type(data).__name__}")
    return data
