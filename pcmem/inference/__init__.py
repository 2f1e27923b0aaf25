"""Local inference: the structured-generation port, llama.cpp adapters and model presets."""
