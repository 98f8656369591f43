defmodule SamgitaProtocol.MixProject do
  use Mix.Project

  @version "0.1.0"

  def project do
    [
      app: :samgita_protocol,
      version: @version,
      elixir: "~> 1.18",
      elixirc_paths: elixirc_paths(Mix.env()),
      deps: [],
      docs: [main: "readme"],
      description:
        "Transport-independent Agent protocol: native schema 1.0, codec, pure connection state."
    ]
  end

  # No application callback and nothing started: the library is plain modules.
  def application, do: [extra_applications: []]

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
