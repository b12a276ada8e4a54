"""Read models built from the one event stream; they depend on domain events only."""
