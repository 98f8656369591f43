# Shared timing helpers for the bench/ scripts (loaded with Code.require_file).
# Plain :timer.tc over N iterations after a warm-up; each figure is the median
# of 5 runs. Stdlib only.
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

  def report(label, us, base) do
    IO.puts(
      String.pad_trailing(label, 44) <>
        String.pad_leading(fmt(us), 9) <>
        " µs/op   baseline " <>
        String.pad_leading(fmt(base), 7) <>
        " µs/op   " <> :erlang.float_to_binary(us / base, decimals: 1) <> "x baseline"
    )
  end
end
