"""Pure statistics over stored trials."""
