"""Pure parsers: client outputs and kernel counters -> typed values. No I/O here."""
