"""Memory: scopes, revisions, entries."""
