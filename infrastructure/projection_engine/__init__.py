"""The projection engine: it reads the log in batches and commits each projection's rows with
its tracking position in one transaction."""
