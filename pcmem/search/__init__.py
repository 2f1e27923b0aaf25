"""Hybrid search: text analysis, channels, admission and Reciprocal Rank Fusion."""
