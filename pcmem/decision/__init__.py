"""The decision-model port (yes/no/abstain), the fail-open envelope and role failure policy."""
