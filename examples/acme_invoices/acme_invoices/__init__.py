"""ACME's countersign plug-in: credit notes on ACME's invoices, proposed by an assistant,
approved by a person, issued by ACME's own ledger service (README.md beside this package)."""
