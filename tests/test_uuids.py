"""domain/uuids.py: ``new_id``, ``id_text`` and ``parse`` give what ``uuid4()``, ``str(id)``
and ``UUID(text)`` give, remembered or not."""

from __future__ import annotations

import copy
import pickle
import uuid

import pytest
from countersign.domain import uuids
from countersign.domain.uuids import id_text, new_id, parse


def test_a_new_id_is_a_random_version_4_uuid_as_uuid4_makes_it():
    made = [new_id() for _ in range(2000)]
    assert len(set(made)) == len(made)
    for value in made:
        assert type(value) is uuid.UUID
        assert value.version == 4
        assert value.variant == uuid.RFC_4122
        assert value.is_safe is uuid.SafeUUID.unknown
        like = uuid.UUID(bytes=value.bytes, version=4)
        assert value == like
        assert hash(value) == hash(like)
        assert str(value) == str(like)
    value = made[0]
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value
    with pytest.raises(TypeError):
        value.int = 1  # type: ignore[misc]


def test_texts_and_ids_are_the_uuid_modules_remembered_or_not():
    value = uuid.uuid4()
    assert id_text(value) == str(value)
    assert id_text(value) == str(value)  # remembered
    assert parse(str(value)) == value
    assert parse(str(value).upper()) == value
    assert parse("{" + str(value) + "}") == value
    assert parse(value.hex) == value
    fresh = str(uuid.uuid4())
    assert parse(fresh) == uuid.UUID(fresh)
    assert parse(fresh) == uuid.UUID(fresh)  # remembered
    for broken in ("", "not an id", fresh[:-1], fresh + "0"):
        with pytest.raises(ValueError, match="badly formed"):
            parse(broken)


def test_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(uuids, "_REMEMBERED", 10)
    for _ in range(50):
        value = uuid.uuid4()
        assert parse(id_text(value)) == value
    assert len(uuids._TEXTS) <= 10
    assert len(uuids._IDS) <= 10
