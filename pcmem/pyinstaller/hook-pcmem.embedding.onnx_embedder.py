"""PyInstaller hook for ``pcmem.embedding.onnx_embedder``: leave fastembed out of a frozen app.

pcmem's presets (the default MiniLM among them) run on onnxruntime and tokenizers alone; fastembed serves only a local
model directory and ``fastembed:MODEL`` catalogue models, and it brings Pillow, huggingface_hub and hf_xet (~45 MB)
into every bundle. An app that uses those embedders freezes with ``--hidden-import fastembed``; without it pcmem
says so (pcmem.embedding.onnx_embedder.fastembed_missing).
"""

excludedimports = ["fastembed"]
