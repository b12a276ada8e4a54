"""A company's countersign plug-in, as small as it can be (tests/plugins/README.md)."""
