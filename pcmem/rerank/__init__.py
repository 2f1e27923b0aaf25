"""The rerank seam (PowerContext's) and its policies: one module per reranker."""
