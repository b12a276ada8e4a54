"""JSON written by orjson to exactly the bytes the standard library's encoder writes.

The hash chain, the contract digest and the stored events are JSON written by the standard
library's encoder (compact separators, ``ensure_ascii=False``; sorted keys for the digests),
and their bytes are fixed forever: a link covers the bytes, and a stored event is read back
by the library. The standard library calls back into Python for every id and time, and a
cycle writes fourteen such texts. orjson writes the same text in C for plain values (exact
``str``, ``int``, ``bool``, ``None``, ``dict`` with string keys, ``list`` and ``tuple``), except
floats, which it writes in its own way (``1e-7`` for ``1e-07``): ``preparer`` turns a value into
what orjson writes as the standard library would, floats as the standard library's own text,
and anything else through ``convert`` (an id as its string, say), which raises ``NotPlain`` for
what only the standard library writes exactly (a subclass, an unknown type). Every caller
keeps the standard library's encoder as the reference, and the one that writes what
``NotPlain`` or orjson refuses (``REFUSED``: a key that is not an exact string, an integer over
64 bits, too deep a nesting).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson


class NotPlain(Exception):
    """The value holds something only the standard library's encoder writes exactly."""


#: What ``preparer``'s function or orjson raise where the standard library's encoder must
#: write the value (or refuse it, as it always did). orjson's refusals are TypeErrors.
REFUSED = (NotPlain, TypeError, RecursionError)

SORT_KEYS = orjson.OPT_SORT_KEYS
dumps = orjson.dumps
_fragment = orjson.Fragment
#: The standard library's text of a float: its repr; NaN and Infinity as it writes them.
_float_text = json.JSONEncoder(allow_nan=True).encode


def not_plain(value: Any) -> Any:
    """``convert`` for text with no ids or times: everything not plain is refused."""
    raise NotPlain


def preparer(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:  # noqa: C901 - inline
    """A function that turns a value into what orjson writes as the standard library would,
    with ``convert`` for every value that is neither plain nor a float (it returns what to
    write in its place, prepared, or raises ``NotPlain``). A dict, list or tuple whose items
    are all plain (strings and integers; in a dict also booleans and None) is returned as it
    is, not copied, and so is a dict whose items all come back as
    they are (nested plain containers, what ``convert`` returns unchanged): what it returns
    is for writing at once, never to be changed, and only by orjson, which refuses a key that
    is not an exact string (the walk does not test keys)."""

    def prepare(value: Any) -> Any:  # noqa: C901 - one walk, its tests inline (calls cost)
        kind = type(value)
        if kind is dict:
            # One pass: a dict whose items all come back as they are (plain values, plain
            # nested containers, what ``convert`` returns unchanged) is written as it is, not
            # copied. At the first item that changes the dict is copied, in C, and only the
            # items that change are written into the copy.
            prepared = value
            for key, item in value.items():
                # Keys are not tested here: orjson refuses any key but an exact str (the
                # standard library writes 1 as "1", True as "true"), as every caller's
                # ``dumps`` of what this returns does, and the caller's reference encoder
                # then writes it.
                item_kind = type(item)
                if item_kind is str or item_kind is int or item_kind is bool or item is None:
                    continue
                if item_kind is list:
                    # A list of strings and integers (most of a dict's lists) is tested here,
                    # without a call, and written as it is.
                    for element in item:
                        element_kind = type(element)
                        if element_kind is not str and element_kind is not int:
                            break
                    else:
                        continue
                    ready = prepare(item)
                elif (
                    item_kind is dict
                    or item_kind is tuple
                    or item_kind is float
                    or isinstance(item, str)
                ):
                    ready = prepare(item)
                else:
                    # What prepare(item) would come to (an id, a time): one call, not two.
                    ready = convert(item)
                if ready is not item:
                    if prepared is value:
                        prepared = value.copy()
                    prepared[key] = ready
            return prepared
        if kind is str or kind is int or kind is bool or value is None:
            return value
        if kind is list or kind is tuple:
            for item in value:
                if type(item) is not str and type(item) is not int:
                    break
            else:
                return value  # strings and integers alone (orjson writes a tuple as a list)
            return [
                item if type(item) is str or type(item) is int else prepare(item) for item in value
            ]
        if kind is float:
            return _fragment(_float_text(value).encode())
        if isinstance(value, str):
            # A str subclass (a StrEnum's member): both write its characters.
            return str.__str__(value)
        return convert(value)

    return prepare
