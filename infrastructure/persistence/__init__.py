"""Persistence: the only code that knows eventsourcing's internals.

Everything countersign relies on beyond eventsourcing 9.5.6's documented API is here, and an
import-linter contract keeps the rest of infrastructure away from the library. Upgrading the
library means re-checking each point below (the tests named guard them):

- ``recorders``: subclasses of the library's SQLite and PostgreSQL application recorders.
  PostgreSQL commits go through countersign's own insert function (one round trip: the table
  lock that keeps notification ids in commit order, the read-set check, NOTIFY, the insert),
  replacing the library's ``insert_events``; the library's retry of a dropped connection is
  kept. 9.5.6's own database function (``POSTGRES_ENABLE_DB_FUNCTIONS``) skips that lock, so
  it stays off (``infrastructure/settings.py``). The SQLite factory works around 9.5.6
  opening connections with ``cached_statements=True`` (a cache of ONE statement). Both add
  ``select_log``, plain log rows for the projection engine.
  (tests/test_recorders.py, tests/test_optimistic_reads.py)
- ``app`` and ``event_store``: an ``Application`` (``app``) whose mapper fails closed on
  foreign topics and class versions from the future; the store's ``save`` without the
  library's per-object checks (``collect_events``, ``mapper.to_stored_event``,
  ``recorder.insert_events``); the legacy topic alias
  (``register_topic("domain", countersign.domain)``) for events stored before the
  ``countersign`` namespace. (tests/test_corrupt_records.py, tests/test_upgrade_fixture.py)
- ``log_decoder``: decodes stored event state with orjson the way the library's JSON
  transcoder and mapper would (its ``_type_``/``_data_`` object hook, the event's
  ``__dict__`` layout); anything unusual goes to the library's mapper.
  (tests/test_projection_events.py)
- ``aggregate_copy``: copies an ``Aggregate`` by its ``__dict__``, and freezes a shared
  snapshot by wrapping ``trigger_event``, the method every library event goes through.
  (tests/test_aggregate_copy.py, tests/test_shared_snapshots.py)
- ``stored_snapshots``: the library's ``Snapshot`` (``take``, and ``mutate``, which upcasts
  with the aggregate's ``upcast_vN_vN+1``) in a table the library's aggregate recorder makes
  (``{app}_snapshots``, SQLite ``stored_snapshots``), read by the store's own SQL beside the
  events (``store_sql``: that SQL, and the snapshots' replacement).
  (tests/test_stored_snapshots.py)
- ``unit_of_work`` and ``sql``: plain SQL beside the store; they rely on the table names the
  library gives (``{app}_events``, ``stored_events``).
"""
