# Shared timing helpers for the bench/ scripts (loaded with Code.require_file).
# Plain :timer.tc over N iterations after a warm-up; `measure/4` reports the
# median of 5 runs, `paired/5` the medians of alternating rounds against a
# baseline and the median of the per-round ratios. Stdlib only.
defmodule Bench.CancelHandler do
  @moduledoc false
  # The trivial handler of the round-trip benchmarks.
  @behaviour SamgitaProtocol.Handler

  @impl true
  def methods, do: ["request/cancel"]

  @impl true
  def handle_request("request/cancel", %{"request_id" => id}, _ctx, n),
    do: {:ok, %{"request_id" => id, "cancel_status" => "already_finished"}, n + 1}
end

defmodule Bench do
  @moduledoc false
  @runs 5

  alias SamgitaProtocol.{Client, Codec, Server}

  # Runs `fun.(acc)` n times per run (threading the accumulator), after a
  # warm-up of `warm` iterations, and returns {median µs/op, acc}.
  def measure(n, warm, acc, fun) do
    acc = loop(warm, acc, fun)

    {times, acc} =
      Enum.map_reduce(1..@runs, acc, fn _, acc ->
        {us, acc} = :timer.tc(fn -> loop(n, acc, fun) end)
        {us / n, acc}
      end)

    {median(times), acc}
  end

  # Measures `ours` against `base` in alternating rounds (the order flips
  # every round), so drift in a noisy, shared machine hits both alike.
  # Each fun is `{acc, fun}` run n times per round after a warm-up. Returns
  # %{ours: median µs/op, base: median µs/op, ratio: median of the per-round
  # ratios, acc: ours' final accumulator}.
  def paired(n, warm, {ours_acc, ours}, {base_acc, base}, rounds \\ 11) do
    ours_acc = loop(warm, ours_acc, ours)
    base_acc = loop(warm, base_acc, base)

    {samples, {ours_acc, _}} =
      Enum.map_reduce(1..rounds, {ours_acc, base_acc}, fn round, {oa, ba} ->
        time = fn acc, fun ->
          {us, acc} = :timer.tc(fn -> loop(n, acc, fun) end)
          {us / n, acc}
        end

        {{o, oa}, {b, ba}} =
          if rem(round, 2) == 0 do
            {time.(oa, ours), time.(ba, base)}
          else
            {b, ba} = time.(ba, base)
            {time.(oa, ours), {b, ba}}
          end

        {{o, b}, {oa, ba}}
      end)

    %{
      ours: median(Enum.map(samples, &elem(&1, 0))),
      base: median(Enum.map(samples, &elem(&1, 1))),
      ratio: median(Enum.map(samples, fn {o, b} -> o / b end)),
      acc: ours_acc
    }
  end

  defp loop(0, acc, _fun), do: acc
  defp loop(n, acc, fun), do: loop(n - 1, fun.(acc), fun)

  def median(xs), do: xs |> Enum.sort() |> Enum.at(div(length(xs), 2))

  def wire(message) do
    {:ok, binary} = Codec.encode(message)
    binary
  end

  def fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 2)

  # Initializes a client against a server over JSON bytes.
  def init(client, server) do
    {:ok, init, client} = Client.request(client, "connection/initialize", %{})
    {:ok, [response], server} = Server.receive(server, wire(init))
    {:ok, [{:response, _, _}], client} = Client.receive(client, wire(response))
    {client, server}
  end

  @cancel_params %{"request_id" => "r-1", "reason" => "bench"}

  # An initialized client/server pair for request/cancel round trips, and one
  # request and its response as wire bytes (the response matched by a copy
  # of the client, so the returned client has nothing pending).
  def cancel_pair do
    {:ok, client} = Client.new(capabilities: ["cancellation.v1"])

    {:ok, server} =
      Server.new(Bench.CancelHandler, 0, capabilities: ["cancellation.v1"], host_id: "bench-host")

    {client, server} = init(client, server)
    {:ok, request, waiting} = Client.request(client, "request/cancel", @cancel_params)
    request_bin = wire(request)
    {:ok, [response], _server} = Server.receive(server, request_bin)
    response_bin = wire(response)

    %{
      client: client,
      server: server,
      waiting: waiting,
      params: @cancel_params,
      request: request,
      response: response,
      request_bin: request_bin,
      response_bin: response_bin
    }
  end

  def delta(text),
    do: %{
      "schema_version" => "1.0",
      "type" => "notification",
      "method" => "item/delta",
      "params" => %{
        "thread_id" => "thread-1",
        "turn_id" => "turn-1",
        "item_id" => "item-1",
        "delta" => text
      }
    }

  def report(label, %{ours: us, base: base, ratio: ratio}) do
    IO.puts(
      String.pad_trailing(label, 44) <>
        String.pad_leading(fmt(us), 9) <>
        " µs/op   baseline " <>
        String.pad_leading(fmt(base), 7) <>
        " µs/op   " <> :erlang.float_to_binary(ratio, decimals: 2) <> "x baseline"
    )
  end
end
