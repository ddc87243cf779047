"""The agent protocol's vocabulary, declared once as pydantic classes.

- `modes`: the enumerations (approval modes, option ids, queue modes) and the version;
- `errors`: the JSON-RPC error codes and what each means;
- `events`: what a session streams (`agent/event` over LSP; translated for ACP);
- `methods`: every `agent/*` method: its params and its result;
- `wire_events`: agent events in the shape they travel in.

`protocol.md` documents these classes; `schema/tiller.schema.json` is generated from them
(`tiller schema`), and the TypeScript and Lua clients follow the schema.
"""
