defmodule SamgitaProtocol.Codec do
  @moduledoc """
  Encodes and decodes native `1.0` messages. Never raises on any input.

  `decode/2` checks, in this order, each with its own error code:

    1. the input is at most `:max_message_bytes` UTF-8 bytes (`:message_too_large`)
    2. it is valid UTF-8 (`:invalid_utf8`; OTP's decoder checks this while
       decoding, and only a failed decode is scanned again to pick the code)
    3. it is one JSON value with nothing after it (`:invalid_json`), with no
       key repeated in an object (`:duplicate_key`), nested at most
       `:max_depth` deep (`:depth_exceeded`; above 16 KiB checked while
       decoding, so no deeper term is ever built from a large input; a
       smaller input is measured right after decoding, before step 4, and
       gets the same codes)
    4. it is a valid envelope for its `type` and `method`: see
       `SamgitaProtocol.Schema` and `docs/protocol.md`

  A response's `result` is checked against its method's result schema only by
  `SamgitaProtocol.Client` / `SamgitaProtocol.Server`, which know the pending
  request: the envelope alone cannot establish that context.

  ## Options

    * `:max_message_bytes` - the largest message in bytes. Defaults to `#{1_048_576}` (1 MiB).
    * `:max_depth` - the deepest JSON nesting allowed. Defaults to `32`.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.{Error, Schema}
  alias SamgitaProtocol.Schema.{Checker, Encoder, Validator}

  @default_max_message_bytes 1_048_576
  @default_max_depth 32
  @depth_key {__MODULE__, :depth}

  @type option :: {:max_message_bytes, pos_integer()} | {:max_depth, pos_integer()}

  @doc "The default message size bound in bytes (1 MiB)."
  @spec default_max_message_bytes() :: pos_integer()
  def default_max_message_bytes, do: @default_max_message_bytes

  @doc "The default JSON nesting bound (32)."
  @spec default_max_depth() :: pos_integer()
  def default_max_depth, do: @default_max_depth

  @doc """
  Decodes and validates one message.

  ## Examples

      iex> json = ~s({"schema_version":"1.0","type":"notification","method":"thread/closed","params":{"thread_id":"t1"}})
      iex> {:ok, message} = SamgitaProtocol.Codec.decode(json)
      iex> message["params"]
      %{"thread_id" => "t1"}

      iex> {:error, error} = SamgitaProtocol.Codec.decode(~s({"schema_version":"2.0"}))
      iex> error.code
      :unsupported_version

  ## Error reasons

  Every code listed in the module documentation and in `docs/protocol.md`;
  the error's `data["path"]` is the JSON pointer of the offending field.
  """
  @spec decode(binary(), [option()]) :: {:ok, map()} | {:error, Error.t()}
  def decode(binary, opts \\ [])

  def decode(binary, opts) when is_binary(binary) do
    %{max_message_bytes: max_bytes, max_depth: max_depth} = options(opts)

    with {:ok, term, _kind, _spec} <- decode_message(binary, max_bytes, max_depth),
         do: {:ok, term}
  end

  def decode(_other, _opts), do: {:error, Error.new(:invalid_message, "expected a binary")}

  @doc false
  # decode/2 with its options already read, also returning what the message
  # is (Client and Server call this on every message and dispatch on it).
  @spec decode_message(binary(), pos_integer(), pos_integer()) ::
          {:ok, map(), :request | :response | :notification, Schema.method_spec() | nil}
          | {:error, Error.t()}
  def decode_message(binary, max_bytes, _max_depth) when byte_size(binary) > max_bytes do
    {:error,
     Error.peer(:message_too_large, "message is larger than #{max_bytes} bytes", %{
       "bytes" => byte_size(binary),
       "max" => max_bytes
     })}
  end

  def decode_message(binary, _max_bytes, max_depth) do
    case decode_json(binary, max_depth) do
      {:ok, term, depth} ->
        # The fast check also bounds depth (it visits every container), so
        # a valid message is done here; anything else is measured first
        # (depth errors come before schema errors) and then named by the
        # full validator.
        case Checker.message(term, {max_depth, false}) do
          {:ok, kind, spec} -> {:ok, term, kind, spec}
          :slow -> explain(term, depth, max_depth)
        end

      {:error, error} ->
        {:error, classify_json_error(binary, error)}
    end
  end

  defp explain(term, :unmeasured, max_depth) do
    if within_depth?(term, 1, max_depth),
      do: explain(term, :bounded, max_depth),
      else: {:error, depth_error(max_depth)}
  end

  defp explain(term, :bounded, max_depth) do
    with {:ok, kind, spec} <-
           Validator.full_message(term, %{trusted: true, max_depth: max_depth}),
         do: {:ok, term, kind, spec}
  end

  # OTP's decoder validates UTF-8 inside strings and accepts only ASCII
  # outside them, so a successful decode implies valid UTF-8 and the input
  # is scanned once. Only a failed decode is checked again, to report
  # invalid UTF-8 under its own code rather than as a JSON syntax error.
  defp classify_json_error(binary, error) do
    if String.valid?(binary),
      do: error,
      else: Error.peer(:invalid_utf8, "message is not valid UTF-8")
  end

  @doc """
  Validates a message term that did not come from `decode/2` (for example one
  built by the caller), with the same rules plus JSON-ness of every value,
  string keys and UTF-8 of every string.
  """
  @spec validate(term(), [option()]) :: {:ok, map()} | {:error, Error.t()}
  def validate(message, opts \\ []) do
    with {:ok, message, _kind, _spec} <- classify(message, opts), do: {:ok, message}
  end

  defp classify(message, opts) do
    %{max_depth: max_depth} = options(opts)

    case Validator.message(message, %{trusted: false, max_depth: max_depth}) do
      {:ok, kind, spec} -> {:ok, message, kind, spec}
      {:error, error} -> {:error, %{error | origin: :local}}
    end
  end

  @doc false
  # Validates a message the caller decoded itself and hands to `receive/3`.
  # Schema violations are the peer's (`:peer`); a term no JSON decoder can
  # produce (non-string keys, invalid UTF-8, tuples, atoms, improper lists)
  # is the caller's own decoding bug and stays `:local`. The extra walk runs
  # only on the error path.
  # Returns what the message is, like decode_message/3.
  @spec validate_received(term(), [option()]) ::
          {:ok, map(), :request | :response | :notification, Schema.method_spec() | nil}
          | {:error, Error.t()}
  def validate_received(message, opts \\ []) do
    %{max_message_bytes: max_bytes} = options(opts)

    case classify(message, opts) do
      {:ok, message, kind, spec} ->
        # A map has no wire size; bound what it would encode to instead.
        with :ok <- check_size(message, max_bytes, :peer), do: {:ok, message, kind, spec}

      {:error, error} ->
        if json_term?(message, 0), do: {:error, %{error | origin: :peer}}, else: {:error, error}
    end
  end

  # Deeper than this the term is reported as the peer's (depth_exceeded is
  # expressible in JSON); it also bounds this walk over caller terms.
  @json_walk_limit 64

  defp json_term?(_term, depth) when depth > @json_walk_limit, do: true

  defp json_term?(map, depth) when is_map(map) do
    Enum.all?(map, fn {k, v} -> is_binary(k) and String.valid?(k) and json_term?(v, depth + 1) end)
  end

  defp json_term?(list, depth) when is_list(list), do: json_list?(list, depth + 1)

  defp json_term?(binary, _depth) when is_binary(binary), do: String.valid?(binary)

  defp json_term?(other, _depth),
    do: is_number(other) or is_boolean(other) or is_nil(other)

  # By hand rather than Enum.all?/2, which raises on an improper list.
  defp json_list?([], _depth), do: true
  defp json_list?([item | rest], depth), do: json_term?(item, depth) and json_list?(rest, depth)
  defp json_list?(_improper_tail, _depth), do: false

  @doc """
  Validates and encodes one message to a JSON binary.

  ## Examples

      iex> message = %{"schema_version" => "1.0", "type" => "notification",
      ...>   "method" => "thread/closed", "params" => %{"thread_id" => "t1"}}
      iex> {:ok, json} = SamgitaProtocol.Codec.encode(message)
      iex> SamgitaProtocol.Codec.decode(json) == {:ok, message}
      true

      iex> {:error, error} = SamgitaProtocol.Codec.encode(%{"schema_version" => "1.0", "type" => "notification",
      ...>   "method" => "thread/closed", "params" => %{thread_id: "t1"}})
      iex> error.code
      :invalid_key

  """
  @spec encode(term(), [option()]) :: {:ok, binary()} | {:error, Error.t()}
  def encode(message, opts \\ []) do
    %{max_message_bytes: max_bytes, max_depth: max_depth} = options(opts)

    # One pass that validates and encodes (see Schema.Encoder); anything it
    # does not vouch for goes through the validator, which names the error.
    case Encoder.encode(message, max_depth) do
      {:ok, binary} ->
        check_encoded_size(binary, max_bytes)

      :slow ->
        with {:ok, message} <- validate(message, opts), do: encode_valid(message, max_bytes)
    end
  end

  @doc false
  # Encodes a message that the caller already validated (the core's own
  # output), still enforcing the size bound.
  @spec encode_valid(map(), pos_integer()) :: {:ok, binary()} | {:error, Error.t()}
  def encode_valid(message, max_bytes \\ @default_max_message_bytes) do
    check_encoded_size(IO.iodata_to_binary(JSON.encode_to_iodata!(message)), max_bytes)
  end

  defp check_encoded_size(binary, max_bytes) do
    if byte_size(binary) > max_bytes do
      {:error,
       Error.new(:message_too_large, "message is larger than #{max_bytes} bytes", %{
         "bytes" => byte_size(binary),
         "max" => max_bytes
       })}
    else
      {:ok, binary}
    end
  end

  @doc false
  # Whether a valid message term encodes to at most `max_bytes`, without
  # encoding it in the common case: JSON is at most 6 bytes per byte of the
  # external term format (the worst case is a control character escaped as
  # \u00XX; every other term encodes to fewer bytes than its external form
  # times 6), so only terms above max_bytes / 6 are encoded to measure them.
  @spec check_size(map(), pos_integer(), Error.origin()) :: :ok | {:error, Error.t()}
  def check_size(message, max_bytes, origin \\ :local) do
    if 6 * :erlang.external_size(message) <= max_bytes do
      :ok
    else
      case encode_valid(message, max_bytes) do
        {:ok, _} -> :ok
        {:error, error} -> {:error, %{error | origin: origin}}
      end
    end
  end

  @doc false
  @spec options(keyword()) :: %{max_message_bytes: pos_integer(), max_depth: pos_integer()}
  def options([]),
    do: %{max_message_bytes: @default_max_message_bytes, max_depth: @default_max_depth}

  def options(opts) when is_list(opts) do
    Enum.reduce(opts, options([]), fn
      {:max_message_bytes, v}, acc when is_integer(v) and v > 0 ->
        %{acc | max_message_bytes: v}

      {:max_depth, v}, acc when is_integer(v) and v > 0 ->
        %{acc | max_depth: v}

      {key, v}, _acc when key in [:max_message_bytes, :max_depth] ->
        raise ArgumentError,
              "expected #{inspect(key)} to be a positive integer, got: #{inspect(v)}"

      other, _acc ->
        raise ArgumentError, "unknown codec option: #{inspect(other)}"
    end)
  end

  # Depth is bounded one of two ways. A message of at most @tracked_above
  # bytes is decoded with OTP's default callbacks (only objects are checked
  # for repeated keys) and its nesting is measured afterwards, by the fast
  # schema check or, when that fails, before the schema is named
  # (`:unmeasured`): a term built from so few bytes is small whatever its
  # depth. A larger message is decoded with depth-tracking start/finish
  # callbacks, so no term deeper than `max_depth` is ever built from it;
  # those callbacks (the depth lives in the process dictionary for the
  # duration of the call) cost about 40% of the decode of a small message.
  @tracked_above 16_384

  defp decode_json(binary, max_depth) when byte_size(binary) <= @tracked_above do
    case decode_untracked(binary) do
      {term, _acc, rest} ->
        if whitespace?(rest),
          do: {:ok, term, :unmeasured},
          else: decode_tracked(binary, max_depth)

      :failed ->
        decode_tracked(binary, max_depth)
    end
  end

  defp decode_json(binary, max_depth), do: decode_tracked(binary, max_depth)

  # Any failure of the untracked decoder (a syntax error, trailing data, a
  # repeated key) is decoded again with depth tracking, which reports the
  # same error the tracked decoder always reports: a depth violation before
  # the first syntax error or repeated key past it. Only invalid input pays.
  defp decode_untracked(binary) do
    :json.decode(binary, [], %{null: nil, object_finish: &__MODULE__.finish_object/2})
  catch
    {:duplicate_key, _key} -> :failed
    :error, _reason -> :failed
  end

  defp decode_tracked(binary, max_depth) do
    Process.put(@depth_key, 0)

    decoders = %{
      array_start: fn _ -> enter(max_depth) end,
      array_finish: fn acc, old ->
        leave()
        {:lists.reverse(acc), old}
      end,
      object_start: fn _ -> enter(max_depth) end,
      object_finish: fn acc, old ->
        leave()
        finish_object(acc, old)
      end,
      null: nil
    }

    case :json.decode(binary, [], decoders) do
      {term, _acc, rest} ->
        if whitespace?(rest),
          do: {:ok, term, :bounded},
          else: {:error, Error.peer(:invalid_json, "unexpected data after the JSON value")}
    end
  catch
    :depth_exceeded -> {:error, depth_error(max_depth)}
    {:duplicate_key, key} -> {:error, duplicate_key_error(key)}
    :error, reason -> {:error, Error.peer(:invalid_json, json_reason(reason))}
  after
    Process.delete(@depth_key)
  end

  @doc false
  # The :json object_finish callback: OTP's default, plus repeated keys.
  def finish_object(pairs, old) do
    map = :maps.from_list(pairs)
    if map_size(map) != length(pairs), do: throw({:duplicate_key, duplicate(pairs)})
    {map, old}
  end

  defp depth_error(max_depth) do
    Error.peer(:depth_exceeded, "JSON nesting is deeper than #{max_depth}", %{"max" => max_depth})
  end

  defp duplicate_key_error(key),
    do: Error.peer(:duplicate_key, "an object repeats a key", %{"key" => key})

  # Whether no container in `term` (at `depth`) is nested deeper than `max`.
  defp within_depth?(map, depth, max) when is_map(map),
    do: depth <= max and values_within_depth?(:maps.values(map), depth + 1, max)

  defp within_depth?(list, depth, max) when is_list(list),
    do: depth <= max and values_within_depth?(list, depth + 1, max)

  defp within_depth?(_scalar, _depth, _max), do: true

  defp values_within_depth?([value | rest], depth, max),
    do: within_depth?(value, depth, max) and values_within_depth?(rest, depth, max)

  defp values_within_depth?([], _depth, _max), do: true

  defp enter(max_depth) do
    depth = :erlang.get(@depth_key) + 1
    if depth > max_depth, do: throw(:depth_exceeded)
    :erlang.put(@depth_key, depth)
    []
  end

  defp leave, do: :erlang.put(@depth_key, :erlang.get(@depth_key) - 1)

  defp duplicate(pairs) do
    Enum.reduce_while(pairs, MapSet.new(), fn {k, _}, seen ->
      if MapSet.member?(seen, k), do: {:halt, k}, else: {:cont, MapSet.put(seen, k)}
    end)
  end

  defp whitespace?(<<>>), do: true
  defp whitespace?(<<c, rest::binary>>) when c in [?\s, ?\t, ?\n, ?\r], do: whitespace?(rest)
  defp whitespace?(_), do: false

  defp json_reason(:unexpected_end), do: "unexpected end of JSON input"
  defp json_reason({:invalid_byte, byte}), do: "invalid byte 0x#{Integer.to_string(byte, 16)}"
  defp json_reason({:unexpected_sequence, _}), do: "invalid escape or number sequence"
  defp json_reason(_), do: "invalid JSON"
end
