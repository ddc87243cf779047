"""The LSP front end: `tiller serve`, a pygls language server speaking the `agent/*` protocol
(protocol.md) over LSP framing, on one `tiller.host.Host`."""
