"""What the documentation site generates while it builds (mkdocs hooks, docsgen/hooks.py): the reference pages' lists
of commands, tools, routes and settings, read from the code that defines them; and the TUI's screenshots
(``python -m docsgen.screenshots``). Not part of any distribution."""
