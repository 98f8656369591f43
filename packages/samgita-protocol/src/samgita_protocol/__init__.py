"""samgita_protocol."""

__all__: list[str] = []
