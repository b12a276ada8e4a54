"""The auditor's tools: verify the hash chain, export the audit trail."""
