"""`tiller chat`: a headless client of `tiller serve` that dogfoods the agent protocol.

`client` speaks the protocol (no terminal code); `terminal` is the command's user interface.
"""

from .client import AgentClient, ConnectionLost, FrameDecoder, JsonRpcConnection, RpcError, encode_frame

__all__ = ["AgentClient", "ConnectionLost", "FrameDecoder", "JsonRpcConnection", "RpcError", "encode_frame"]
