"""The model floor of a cold hybrid search: create the embedder's ONNX Runtime session and embed one query with
onnxruntime and tokenizers directly; prints the seconds that took (Python's own start excluded).

Usage: ``model_floor.py MODEL_DIR QUERY`` (``pcmem bench startup``)."""

import sys
import time

started = time.perf_counter()
import numpy as np  # noqa: E402 - the imports are part of what is measured
import onnxruntime  # noqa: E402
import tokenizers  # noqa: E402

directory = sys.argv[1]
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 1
session = onnxruntime.InferenceSession(directory + "/model.onnx", options, providers=["CPUExecutionProvider"])
tokenizer = tokenizers.Tokenizer.from_file(directory + "/tokenizer.json")
encoded = tokenizer.encode(sys.argv[2])
ids = np.array([encoded.ids], dtype=np.int64)
feed = {"input_ids": ids, "attention_mask": np.array([encoded.attention_mask], dtype=np.int64)}
if "token_type_ids" in {i.name for i in session.get_inputs()}:
    feed["token_type_ids"] = np.zeros_like(ids)
session.run(None, feed)
print(time.perf_counter() - started)
