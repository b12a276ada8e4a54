"""What an operator watches a running countersign by: liveness and readiness (``health``),
Prometheus metrics (``metrics``) and structured logs with correlation ids (``logs``).

Nothing here decides anything; it only reports. Metrics are counted where the work happens
(the approve path, each provider call) and read from the database at scrape time (proposals
by status, projection lag), so every API worker answers the same figures.
"""
