cd /work/main && . /work/main/.venv/bin/activate
export POWERCONTEXT_SERVER_INFERENCE_GENERATION_TIMEOUT_SECONDS=600 PCMEM_INFERENCE_THREADS=1 OPENBLAS_NUM_THREADS=1
date -u
time nice -n 10 python -m pcmem bench locomo --data /work/shared/data/locomo/locomo10.json --questions 100 \
  --modes hybrid --candidates 30 --limit 10 --rerank none,decision,decision-fill \
  --model llama-cpp:qwen2.5-coder-1.5b-instruct --alone-sample 0 \
  --store runs/a/locomo.duckdb --jsonl runs/a/rerank.jsonl --out runs/a/rerank.json
echo rc $?; date -u
