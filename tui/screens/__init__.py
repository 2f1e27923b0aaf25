"""One module per screen; dialogs (confirm, remember, pick a revision) live in ``dialogs``."""
