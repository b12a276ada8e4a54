"""The countersign domain: proposals, outcomes, operation contracts and the club they act on.

Nothing here performs I/O; adapters live in ``infrastructure``.
"""
