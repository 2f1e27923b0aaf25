"""Hybrid search: text analysis, channels, admission and Reciprocal Rank Fusion (SPEC §2)."""
