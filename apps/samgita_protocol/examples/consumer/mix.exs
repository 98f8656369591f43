defmodule SamgitaConsumer.MixProject do
  use Mix.Project

  def project do
    [
      app: :samgita_consumer,
      version: "0.1.0",
      elixir: "~> 1.18",
      start_permanent: Mix.env() == :prod,
      deps: deps()
    ]
  end

  def application, do: [extra_applications: []]

  defp deps, do: [{:samgita_protocol, path: "../.."}]
end
