"""Storage: tables, migrations, the engine, and the named operations on them."""
