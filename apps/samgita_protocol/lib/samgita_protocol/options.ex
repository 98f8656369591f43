defmodule SamgitaProtocol.Options do
  @moduledoc false
  # Option validation, once, at `new`: unknown keys and bad values raise
  # ArgumentError naming the key, the expectation and the value.

  alias SamgitaProtocol.Schema

  @limits [
    max_outstanding_requests: 64,
    max_uncertain_commands: 64,
    max_incoming_requests: 64,
    max_buffered_notifications: 128,
    max_completed: 128,
    max_streams: 64,
    max_stream_hashes: 128,
    max_message_bytes: 1_048_576,
    request_timeout_ms: 30_000
  ]

  @doc false
  def limit_defaults, do: @limits

  @doc false
  # `spec` is a keyword list of `key => {kind, default}`.
  def validate!(opts, spec) when is_list(opts) do
    unless Keyword.keyword?(opts) do
      raise ArgumentError, "expected options to be a keyword list, got: #{inspect(opts)}"
    end

    allowed = Keyword.keys(spec)

    Enum.each(opts, fn {key, _} ->
      unless key in allowed do
        raise ArgumentError,
              "unknown option #{inspect(key)}, expected one of: #{Enum.map_join(allowed, ", ", &inspect/1)}"
      end
    end)

    Map.new(spec, fn {key, {kind, default}} ->
      value = Keyword.get(opts, key, default)
      {key, check!(key, kind, value)}
    end)
  end

  def validate!(opts, _spec),
    do: raise(ArgumentError, "expected options to be a keyword list, got: #{inspect(opts)}")

  @doc false
  # The bound options of `keys` (all of them by default), so each side
  # accepts exactly the bounds it enforces.
  def limit_spec(keys \\ Keyword.keys(@limits)),
    do: for({k, v} <- @limits, k in keys, do: {k, {:pos_integer, v}})

  @doc false
  # Restored stream positions (Client checkpoints, Server positions): a map
  # from stream ids (the wire's `:id` type) to cursors >= 0, at most
  # `max_streams` of them. `key` names the option in the error.
  def stream_positions!(key, positions, max_streams) when is_map(positions) do
    cond do
      not Enum.all?(positions, fn {id, cursor} ->
        id?(id) and is_integer(cursor) and cursor >= 0
      end) ->
        bad!(
          key,
          "a map from stream ids (UTF-8 strings of 1 to #{Schema.max_id_bytes()} bytes) to cursors >= 0",
          positions
        )

      map_size(positions) > max_streams ->
        raise ArgumentError,
              "expected #{inspect(key)} to hold at most :max_streams (#{max_streams}) streams, got: #{map_size(positions)}"

      true ->
        positions
    end
  end

  def stream_positions!(key, other, _max_streams),
    do: bad!(key, "a map from stream ids to cursors", other)

  defp id?(v), do: is_binary(v) and byte_size(v) in 1..Schema.max_id_bytes() and String.valid?(v)

  defp check!(_key, _kind, nil), do: nil

  defp check!(_key, :pos_integer, v) when is_integer(v) and v > 0, do: v
  defp check!(key, :pos_integer, v), do: bad!(key, "a positive integer", v)

  defp check!(_key, :boolean, v) when is_boolean(v), do: v
  defp check!(key, :boolean, v), do: bad!(key, "a boolean", v)

  defp check!(key, :id, v) when is_binary(v) do
    if id?(v),
      do: v,
      else: bad!(key, "a UTF-8 string of 1 to #{Schema.max_id_bytes()} bytes", v)
  end

  defp check!(key, :id, v), do: bad!(key, "a string", v)

  defp check!(key, :groups, v) when is_list(v) do
    unknown = Enum.reject(v, &(&1 in Schema.groups()))

    cond do
      unknown != [] ->
        bad!(key, "a list of defined capability groups (#{Enum.join(Schema.groups(), ", ")})", v)

      length(Enum.uniq(v)) != length(v) ->
        bad!(key, "a list without repeated groups", v)

      true ->
        v
    end
  end

  defp check!(key, :groups, v), do: bad!(key, "a list of capability groups", v)

  defp check!(key, :versions, v) when is_list(v) and v != [] do
    if Enum.all?(v, &(&1 == Schema.version())),
      do: v,
      else: bad!(key, "a list of supported schema versions ([#{inspect(Schema.version())}])", v)
  end

  defp check!(key, :versions, v), do: bad!(key, "a non-empty list of schema versions", v)

  defp check!(_key, :id_generator, v) when is_function(v, 2), do: v
  defp check!(key, :id_generator, v), do: bad!(key, "a function of arity 2", v)

  defp check!(_key, :any, v), do: v

  defp bad!(key, expected, value) do
    raise ArgumentError, "expected #{inspect(key)} to be #{expected}, got: #{inspect(value)}"
  end
end
