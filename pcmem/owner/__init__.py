"""One store file, many processes: the process that holds the file serves every other pcmem process.

DuckDB lets one process at a time open a file read-write. The process that opened it (an app, ``pcmem mcp``, the TUI,
a CLI command) is the store's *owner*: it also listens on a Unix socket named from the file's identity, and every
other pcmem process that opens the same file becomes its *client*, with the same Memory API, results and errors.

- :mod:`~pcmem.owner.address`: the socket's path (a private per-user folder) and the file identity it is named from.
- :mod:`~pcmem.owner.protocol`: length-prefixed JSON frames, the handshake, errors across the socket.
- :mod:`~pcmem.owner.operations`: the one table of operations, built from the Memory API's own methods and types.
- :mod:`~pcmem.owner.server`: the owner's listener (a daemon thread per connection, calls run on its runtime).
- :mod:`~pcmem.owner.client`: the client's Memory objects, and the hand-off when the owner goes away.

Which process becomes which is decided in :mod:`pcmem.compose.owned`. Standard library only: no TCP, no pickle.
"""
