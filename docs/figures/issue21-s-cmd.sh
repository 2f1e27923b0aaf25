cd /work/main && . /work/main/.venv/bin/activate
date -u
time python -m pcmem bench locomo --data /work/shared/data/locomo/locomo10.json \
  --embedder minilm-l6-int8,mpnet-base-int8,embeddinggemma-300m --modes fts,vector,hybrid \
  --rerank none,embedding --rerank-embedder embeddinggemma-300m \
  --store runs/s/locomo.duckdb --jsonl runs/s/side.jsonl --out runs/s/side.json
echo rc $?; date -u
