"""Network: namespaces, the Rattan link between them, and per-namespace TCP settings."""
