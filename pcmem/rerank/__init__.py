"""The rerank seam (RFC 0080) and its policies: one module per reranker."""
