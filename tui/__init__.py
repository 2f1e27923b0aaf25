"""The pcmem terminal UI (Textual). Imports only pcmem's public API; pcmem never imports this package."""
