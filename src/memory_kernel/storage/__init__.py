"""Private: tables, engine, embedded server, error mapping, migrations and vector search.

Nothing here is public API; the services and the kernel use it.
"""
