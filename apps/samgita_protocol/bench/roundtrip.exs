# Round-trip and notification costs against bare JSON.
#
#     cd apps/samgita_protocol && mix run bench/roundtrip.exs
#
# Timing helpers: bench/support/bench.exs.

Code.require_file("support/bench.exs", __DIR__)

alias SamgitaProtocol.{Client, Codec, FakeHost, Schema, Server}

IO.puts(
  "samgita_protocol round trip (OTP #{System.otp_release()}, Elixir #{System.version()}, " <>
    "#{System.schedulers_online()} schedulers; medians of 11 alternating rounds)\n"
)

# (a) full validated round trip -------------------------------------------------

n = 20_000

%{client: client, server: server, params: params} =
  pair = Bench.cancel_pair()

%{request_bin: request_bin, response_bin: response_bin} = pair
{:ok, [{:response, _, _}], _} = Client.receive(pair.waiting, response_bin)

round_trip = fn {c, s} ->
  {:ok, request, c} = Client.request(c, "request/cancel", params)
  {:ok, bin} = Codec.encode(request)
  {:ok, [response], s} = Server.receive(s, bin)
  {:ok, bin} = Codec.encode(response)
  {:ok, [{:response, _, _}], c} = Client.receive(c, bin)
  {c, s}
end

bare_json = fn acc ->
  req = JSON.decode!(request_bin)
  _ = JSON.encode!(req)
  resp = JSON.decode!(response_bin)
  _ = JSON.encode!(resp)
  acc
end

rt = Bench.paired(n, div(n, 5), {{client, server}, round_trip}, {nil, bare_json})
{client, _server} = rt.acc
0 = map_size(Client.pending(client))

Bench.report("(a) request/cancel full round trip", rt)

IO.puts(
  "    request #{byte_size(request_bin)} B, response #{byte_size(response_bin)} B; " <>
    "baseline: JSON.decode! + JSON.encode! of both"
)

# (b) unsequenced notifications -------------------------------------------------

n = 50_000
{:ok, client} = Client.new()

{:ok, server} =
  Server.new(FakeHost, FakeHost.new(), capabilities: Schema.groups(), host_id: "bench-host")

{client, _server} = Bench.init(client, server)

delta = Bench.wire(Bench.delta("The quick brown fox jumps over the lazy dog. "))

notify =
  Bench.paired(
    n,
    div(n, 5),
    {client,
     fn c ->
       {:ok, [{:notification, _}], c} = Client.receive(c, delta)
       c
     end},
    {nil,
     fn acc ->
       _ = JSON.decode!(delta)
       acc
     end}
  )

Bench.report("(b) Client.receive/2 item/delta (unsequenced)", notify)
IO.puts("    notification #{byte_size(delta)} B; baseline: JSON.decode!")
