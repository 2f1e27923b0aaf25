"""Memory: scopes, revisions, entries (SPEC §1)."""
