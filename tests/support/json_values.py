"""Hypothesis strategies for JSON-like values with the types countersign writes (ids, times,
enums, big integers, every float): the byte-for-byte checks of its JSON writers draw from
these (tests/test_chain_link.py, tests/test_transcoder.py)."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

MONTREAL = timezone(timedelta(hours=-5), "EST")


def leaves(*extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Plain values, ids and times (naive, UTC, a negative offset), and ``extra``."""
    found = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text()
        | st.uuids()
        | st.datetimes(timezones=st.none() | st.just(UTC) | st.just(MONTREAL))
    )
    for strategy in extra:
        found = found | strategy
    return found


def nested(
    leaf: st.SearchStrategy[Any], odd_keys: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Lists, tuples and dicts of ``leaf`` up to 20 leaves, some dicts keyed by ``odd_keys``
    (keys a JSON writer must turn into text its own way)."""
    return st.recursive(
        leaf,
        lambda children: (
            st.lists(children, max_size=4)
            | st.lists(children, max_size=4).map(tuple)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
            | st.dictionaries(odd_keys, children, max_size=2)
        ),
        max_leaves=20,
    )
