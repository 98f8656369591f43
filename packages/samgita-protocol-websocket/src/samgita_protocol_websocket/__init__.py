"""samgita_protocol_websocket."""

__all__: list[str] = []
