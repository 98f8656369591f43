"""samgita_protocol_codex."""

__all__: list[str] = []
