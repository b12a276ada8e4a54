"""Who people and services are, kept beside the event store: password hashes, API tokens,
browser session rows and the tables they live in. Shared by every entry point."""
