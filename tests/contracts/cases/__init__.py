"""One module per built-in contract, named like its contract's module in ``domain/contracts/``,
each calling ``register(ConformanceCase(...))`` (the fields are described in
``countersign.infrastructure.testing.conformance``). The conformance suite imports every module
here; nothing else needs to list it."""
