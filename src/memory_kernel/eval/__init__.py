"""The quality evaluation harness behind ``memory-kernel eval`` (data is read from a path,
never bundled)."""
