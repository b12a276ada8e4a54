"""Section assistants: the model proposes through the smallest surface; the application does
the rest. One assistant per section, each with only its own read and propose tools."""
