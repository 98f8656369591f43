# Replay log costs and streamed-delta consumption against bare JSON.
#
#     cd apps/samgita_protocol && mix run bench/replay.exs
#
# Timing helpers: bench/support/bench.exs.

Code.require_file("support/bench.exs", __DIR__)

alias SamgitaProtocol.{Client, FakeHost, Replay, Schema, Server}

IO.puts(
  "samgita_protocol replay (OTP #{System.otp_release()}, Elixir #{System.version()}, " <>
    "#{System.schedulers_online()} schedulers; median of 5 runs)\n"
)

# Replay.append/2 and Replay.since/2 by retained size ---------------------------

delta = Bench.delta("The quick brown fox jumps over the lazy dog. ")
page = Replay.page_size()

IO.puts("Replay (append at steady state: every append also evicts the oldest event;")
IO.puts("        since = one full #{page}-event page: from the middle cursor every time
        (hot), and from a random retained cursor (cold: mostly cache misses))")

IO.puts(
  "  " <>
    String.pad_leading("retained", 9) <>
    String.pad_leading("append µs/op", 15) <>
    String.pad_leading("since hot µs/op", 18) <>
    String.pad_leading("since cold µs/op", 19)
)

# Each size runs in its own process so one size's heap does not tax another.
for n <- [1_000, 10_000, 100_000] do
  Task.async(fn ->
    replay = Replay.new("s", max_events: n, max_bytes: 1_000_000_000_000)
    replay = Enum.reduce(1..n, replay, fn _, r -> elem(Replay.append(r, delta), 2) end)
    ^n = Replay.last_cursor(replay) - Replay.first_cursor(replay) + 1

    {append_us, replay} =
      Bench.measure(5_000, 1_000, replay, fn r ->
        {:ok, _, r} = Replay.append(r, delta)
        r
      end)

    ^n = Replay.last_cursor(replay) - Replay.first_cursor(replay) + 1
    first = Replay.first_cursor(replay)
    span = Replay.last_cursor(replay) - page - first

    middle = first + div(span, 2)

    {hot_us, _} =
      Bench.measure(1_000, 200, replay, fn r ->
        {:ok, %{"events" => events}} = Replay.since(r, middle)
        ^page = length(events)
        r
      end)

    {since_us, _} =
      Bench.measure(1_000, 200, replay, fn r ->
        {:ok, %{"events" => events}} = Replay.since(r, first - 1 + :rand.uniform(span))
        ^page = length(events)
        r
      end)

    IO.puts(
      "  " <>
        String.pad_leading(Integer.to_string(n), 9) <>
        String.pad_leading(Bench.fmt(append_us), 15) <>
        String.pad_leading(Bench.fmt(hot_us), 18) <>
        String.pad_leading(Bench.fmt(since_us), 19)
    )
  end)
  |> Task.await(:infinity)
end

# Streamed deltas: Client.receive/2 + drain/2 + ack_cursor/3 --------------------

{:ok, client} = Client.new()

{:ok, server} =
  Server.new(FakeHost, FakeHost.new(), capabilities: Schema.groups(), host_id: "bench-host")

{client, _server} = Bench.init(client, server)
:ready = Client.state(client)

batch = 64
batches = 4
warm = 8
rounds = 21
total = batch * (warm + rounds * batches)

# One host log yields the sequenced bytes, as a host would send them.
{binaries, _} =
  Enum.map_reduce(1..total, Replay.new("deltas", max_events: 128), fn i, r ->
    {:ok, sequenced, r} = Replay.append(r, Bench.delta("token #{i} "))
    {Bench.wire(sequenced), r}
  end)

chunks = Enum.chunk_every(binaries, batch)
bytes = div(Enum.sum(Enum.map(binaries, &byte_size/1)), total)

consume = fn {c, [chunk | rest]} ->
  c =
    Enum.reduce(chunk, c, fn bin, c ->
      {:ok, [], c} = Client.receive(c, bin)
      c
    end)

  {:ok, notifications, c} = Client.drain(c, batch)
  %{"stream_id" => id, "cursor" => cursor} = List.last(notifications)
  {:ok, c} = Client.ack_cursor(c, id, cursor)
  {c, rest}
end

decode_only = fn [chunk | rest] ->
  Enum.each(chunk, &JSON.decode!/1)
  rest
end

r = Bench.paired(batches, warm, {{client, chunks}, consume}, {chunks, decode_only}, rounds)
{client, []} = r.acc
^total = Client.checkpoints(client)["streams"]["deltas"]
0 = Client.buffered(client)

per = r.ours / batch
base = r.base / batch

IO.puts("\nStreamed item/delta (sequenced, #{bytes} B each; receive + drain/ack every #{batch})")

IO.puts(
  "  Client: #{Bench.fmt(per)} µs/event (#{round(1_000_000 / per)} events/s)   " <>
    "JSON.decode!: #{Bench.fmt(base)} µs/event (#{round(1_000_000 / base)} events/s)   " <>
    :erlang.float_to_binary(r.ratio, decimals: 2) <> "x baseline (median of per-round ratios)"
)
