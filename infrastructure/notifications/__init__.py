"""Delivering the notifications outbox: webhooks and e-mail, at least once.

The ``notifications`` projection (``projections/notifications.py``) lists what people must be
told; nothing here writes to it. A sender pass (``sender.py``):

1. catches the projection up, then **fans out** the outbox rows it has not seen yet into
   deliveries, one per target (each webhook endpoint of the club; each e-mail recipient), in
   one transaction with its cursor, so a notification is fanned out exactly once;
2. **attempts** the deliveries that are due, concurrently (a thread pool, a timeout on every
   request), recording each attempt as soon as it ends: a slow or broken receiver holds up
   nobody else. A failed attempt schedules the next one with tenacity's exponential wait with
   jitter, durably; after the last one the delivery is a dead letter until it is redelivered.

A delivery is claimed for a lease before it is attempted, so a sender killed mid-batch leaves
its claims to expire and the next pass attempts them again: what was not recorded as delivered
may be sent twice. Every delivery of a notification carries its stable event id
(``webhook-id``), which receivers deduplicate by.

Delivery state lives in the operational tables of ``ledger.py``, never in the projection's,
so rebuilding the projection resends nothing.
"""
