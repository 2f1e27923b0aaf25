"""One store file, many processes: the process that holds the file serves every other pcmem process.

DuckDB lets one process at a time open a file read-write. The process that opened it (an app, ``pcmem mcp``, the TUI,
a CLI command) is the store's *owner*: it also listens on a Unix socket named from the file's identity, and every
other pcmem process that opens the same file becomes its *client*, with the same Memory API, results and errors.

- :mod:`~pcmem.owner.address`: where an owner listens (the account's private folder, from the file's identity and
  the account alone, never the environment); :mod:`~pcmem.owner.transport`: how (a Unix socket on Linux; the one
  interface other systems' transports implement).
- :mod:`~pcmem.owner.dial`: reaching the owner — greeting, bounded waits (a stopped owner is named, never waited
  for), waiting for a held file; :mod:`~pcmem.owner.processes`: what the system says of another process.
- :mod:`~pcmem.owner.protocol`: length-prefixed JSON frames, the handshake, errors across the socket;
  :mod:`~pcmem.owner.context`: the client's settings each request carries.
- :mod:`~pcmem.owner.operations`: the one table of operations, built from the Memory API's own methods and types.
- :mod:`~pcmem.owner.server`: the owner's listener (a daemon thread per connection, calls run on its runtime).
- :mod:`~pcmem.owner.client`: the client's Memory objects, and the hand-off when the owner goes away;
  :mod:`~pcmem.owner.in_client`: what a client runs itself (its own reranker and write gate).

Which process becomes which is decided in :mod:`pcmem.compose.owned`. Standard library only: no TCP, no pickle.
"""
