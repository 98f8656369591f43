defmodule SamgitaProtocol.WebSocket do
  @moduledoc """
  Optional authenticated RFC 6455 text transport at /app-server (not yet built; tracked as its own issue).

  This package is an empty, standalone Mix project for now so the repository
  layout, CI and checks are in place; it exposes no API yet.
  """
end
