"""countersign's testing kit, installed with countersign (``countersign[testing]`` brings
pytest): what its own suite uses, so that a plug-in's repository runs the same checks its
in-tree peers pass, without countersign's ``tests/`` folder.

- ``conformance``: ``Conformance`` (which contracts, their cases, their golden folder) and
  ``ConformanceCase`` / ``register`` (what a case declares);
- ``suite``: ``ConformanceSuite``, the conformance checks, parametrized over a
  ``Conformance``'s kinds;
- ``fixtures``: the pytest plug-in with a seeded deployment per test on SQLite and
  PostgreSQL (``cs``, ``seeded``, ``clock``, ``other``), turned on by ``countersign_kit = true``
  (``activation``, the ``pytest11`` entry point);
- ``sandboxes``: the payment and e-mail sandboxes and their scripted faults;
- ``golden``: ``check_golden``, a document compared with (or written to) a file of yours;
- ``databases``, ``deployment``: the per-test databases and the seeded members' names.

Importing this package imports nothing; import the module you use. (The kit is
``countersign.infrastructure.testing``: the repository's top level is fixed, so there is no
``countersign.testing`` alias.)
"""
