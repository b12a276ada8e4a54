"""Use cases: proposals (propose, approve, decline, expire, reconcile) and club operations."""
