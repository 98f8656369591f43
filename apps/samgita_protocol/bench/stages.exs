# Where a validated request/response round trip spends its time, stage by
# stage, next to the bare JSON work of the same bytes. For profiling, not for
# the README's figures (those come from roundtrip.exs's alternating rounds):
# stages are timed separately, so machine drift shows up between lines.
#
#     cd apps/samgita_protocol && mix run bench/stages.exs
#
# Timing helpers: bench/support/bench.exs.

Code.require_file("support/bench.exs", __DIR__)

alias SamgitaProtocol.{Client, Codec, Server}

%{client: client, server: server, waiting: waiting, params: params} =
  pair = Bench.cancel_pair()

%{request: request, response: response} = pair
%{request_bin: request_bin, response_bin: response_bin} = pair

# Each stage starts from the same state every time (the state it returns is
# dropped), so the figures do not include a growing history.
stages = [
  {"Client.request/4", fn -> Client.request(client, "request/cancel", params) end},
  {"Codec.encode/2 (request)", fn -> Codec.encode(request) end},
  {"Server.receive/3 (request bytes)", fn -> Server.receive(server, request_bin) end},
  {"Codec.encode/2 (response)", fn -> Codec.encode(response) end},
  {"Client.receive/3 (response bytes)", fn -> Client.receive(waiting, response_bin) end}
]

parts = [
  {"  of which Codec.decode/2 (request)", fn -> Codec.decode(request_bin) end},
  {"  of which Codec.validate/2 (request)", fn -> Codec.validate(request) end},
  {"  of which Codec.decode/2 (response)", fn -> Codec.decode(response_bin) end},
  {"  of which Codec.validate/2 (response)", fn -> Codec.validate(response) end}
]

bare = [
  {"JSON.decode!/1 (request)", fn -> JSON.decode!(request_bin) end},
  {"JSON.encode!/1 (request)", fn -> JSON.encode!(request) end},
  {"JSON.decode!/1 (response)", fn -> JSON.decode!(response_bin) end},
  {"JSON.encode!/1 (response)", fn -> JSON.encode!(response) end}
]

time = fn {label, fun} ->
  {us, _} = Bench.measure(30_000, 5_000, nil, fn acc -> fun.() && acc end)
  IO.puts(String.pad_trailing(label, 44) <> String.pad_leading(Bench.fmt(us), 8) <> " µs")
  us
end

IO.puts("Round trip by stage (median of 5 runs each)\n")
ours = stages |> Enum.map(time) |> Enum.sum()
Enum.each(parts, time)
IO.puts("")
base = bare |> Enum.map(time) |> Enum.sum()

IO.puts(
  "\nstages #{Bench.fmt(ours)} µs, bare JSON #{Bench.fmt(base)} µs: " <>
    :erlang.float_to_binary(ours / base, decimals: 2) <> "x"
)
