"""Benchmarks. Each prints ratios against a reference measured in the same run (these machines are shared and
noisy, so absolute numbers alone mean little)."""
