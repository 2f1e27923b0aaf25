"""Storage: the backend port and its engines."""
