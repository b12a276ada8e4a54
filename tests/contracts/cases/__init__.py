"""One module per registered contract, named like its contract's module in
``domain/contracts/``, each calling ``register(ConformanceCase(...))`` (the fields are described
in ``tests/contracts/conformance.py``). The conformance suite imports every module here;
nothing else needs to list it."""
