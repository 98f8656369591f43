defmodule SamgitaProtocol.WebSocket.MixProject do
  use Mix.Project

  def project do
    [
      app: :samgita_protocol_websocket,
      version: "0.1.0",
      elixir: "~> 1.18",
      deps: []
    ]
  end

  # No application callback: nothing starts when the package is loaded.
  def application, do: [extra_applications: []]
end
