"""Adapters to the outside world: the payment sandbox, the model clients, the clock."""
