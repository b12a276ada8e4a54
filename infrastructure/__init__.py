"""Adapters: event store, payment-provider sandbox, settings, CLI, demo and the one bootstrap."""
