"""The club's own aggregates: the things proposals act on."""
