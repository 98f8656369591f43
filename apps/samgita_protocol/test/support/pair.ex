defmodule SamgitaProtocol.Test.Pair do
  @moduledoc false
  # A client connected to a server over "JSON bytes": every message is
  # encoded and decoded, as a transport would.

  alias SamgitaProtocol.{Client, Codec, FakeHost, Server}

  def new(client_opts \\ [], server_opts \\ []) do
    {:ok, client} = Client.new(client_opts)

    {:ok, server} =
      Server.new(
        FakeHost,
        FakeHost.new(),
        Keyword.merge(
          [capabilities: SamgitaProtocol.Schema.groups(), host_id: "host-1"],
          server_opts
        )
      )

    {:ok, init, client} = Client.request(client, "connection/initialize", %{})
    {{:ok, [response], server}, client} = {deliver(server, init), client}
    {:ok, [{:response, _, result}], client} = Client.receive(client, wire(response))
    {client, server, result}
  end

  def call(client, server, method, params, opts \\ []) do
    {:ok, request, client} = Client.request(client, method, params, opts)
    {:ok, [response], server} = deliver(server, request)
    {:ok, effects, client} = Client.receive(client, wire(response))
    {effects, client, server}
  end

  def deliver(server, message), do: Server.receive(server, wire(message))

  def wire(message) do
    {:ok, binary} = Codec.encode(message)
    binary
  end
end
