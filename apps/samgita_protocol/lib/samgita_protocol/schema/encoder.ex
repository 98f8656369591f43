defmodule SamgitaProtocol.Schema.Encoder do
  @moduledoc false
  # Validates a caller-built message and encodes it to JSON in one pass.
  #
  # `SamgitaProtocol.Codec.encode/2` used to validate a message (one walk)
  # and then hand it to `JSON.encode!/1` (a second walk), on every message the
  # core sends. This walk does both: it follows the schema, appends each
  # value to one binary as it checks it, and writes the known keys of every
  # object from precomputed literals instead of escaping them again.
  #
  # It is sound, not complete: `{:ok, binary}` only for a message that
  # `Validator.message/2` (trusted: false) accepts, and then the binary is
  # byte for byte what `JSON.encode!/1` makes of it (pairs in the same map
  # iteration order, the same escaping by OTP's `:json.encode_binary/1`, the
  # same number formats). Anything else, invalid or only unusual, is
  # `:slow`, and the codec falls back to the validator, which names the
  # error, and `JSON.encode!/1`. So the error a caller gets never depends on
  # this module; the codec's differential tests hold the two paths equal.

  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.{Plan, Validator}

  @max_id_bytes Schema.max_id_bytes()

  # -- plans, computed at compile time (see Schema.Plan) ---------------------

  methods = Schema.methods()

  {plans, fields} =
    Plan.build(Plan.envelopes() ++ Enum.map(methods, & &1.params), Schema.definitions())

  {[request, mutation, response, notification], params_plans} = Enum.split(plans, 4)

  @request_envelope request
  @mutation_envelope mutation
  @response_envelope response
  @notification_envelope notification

  # One clause per method name (see Schema.method/1).
  for {spec, params} <- Enum.zip(methods, params_plans) do
    defp method(unquote(spec.method)),
      do: unquote(Macro.escape({spec.kind, spec.mutation, params}))
  end

  defp method(_name), do: nil

  # Schema strings (keys, enum values, constants) are written as they are:
  # each must be its own JSON string body.
  plain! = fn string ->
    ^string = string |> JSON.encode!() |> binary_part(1, byte_size(string))
    string
  end

  plain_plan! = fn
    plain_plan!, {:list, plan, _, _} -> plain_plan!.(plain_plan!, plan)
    _, {:enum, values} -> Enum.each(Map.keys(values), plain!)
    _, {:const, value} -> plain!.(value)
    _, _ -> :ok
  end

  # One clause per object field, with the field's key as JSON (`"key":`);
  # any other key is not in the object.
  for {id, key, plan, flag} <- fields do
    plain_plan!.(plain_plan!, plan)
    prefix = "\"" <> plain!.(key) <> "\":"
    defp field(unquote(id), unquote(key)), do: unquote(Macro.escape({prefix, plan, flag}))
  end

  defp field(_object, _key), do: throw(:slow)

  # -- encoding ------------------------------------------------------------

  @spec encode(term(), pos_integer()) :: {:ok, binary()} | :slow
  def encode(message, max_depth) do
    {:ok, message(message, max_depth)}
  catch
    :slow -> :slow
    # :json.encode_binary/1 on a string that is not UTF-8.
    :error, {:invalid_byte, _} -> :slow
    :error, :unexpected_end -> :slow
  end

  defp message(%{"schema_version" => "1.0", "type" => type} = message, max) do
    case type do
      "request" -> request(message, max)
      "response" -> response(message, max)
      "notification" -> notification(message, max)
      _ -> throw(:slow)
    end
  end

  defp message(_message, _max), do: throw(:slow)

  defp request(%{"method" => method} = message, max) do
    case method(method) do
      {:request, mutation, params} ->
        if mutation != is_map_key(message, "command_id"), do: throw(:slow)
        envelope = if mutation, do: @mutation_envelope, else: @request_envelope
        object(message, envelope, params, 1, max, <<>>)

      _ ->
        throw(:slow)
    end
  end

  defp request(_message, _max), do: throw(:slow)

  defp response(message, max) do
    if is_map_key(message, "result") == is_map_key(message, "error"), do: throw(:slow)
    object(message, @response_envelope, nil, 1, max, <<>>)
  end

  defp notification(%{"method" => method} = message, max) do
    case method(method) do
      {:notification, _mutation, params} ->
        if is_map_key(message, "stream_id") != is_map_key(message, "cursor"), do: throw(:slow)
        object(message, @notification_envelope, params, 1, max, <<>>)

      _ ->
        throw(:slow)
    end
  end

  defp notification(_message, _max), do: throw(:slow)

  # `params` is the method's params plan inside an envelope, nil below it.
  defp object(map, {:object, id, required}, params, depth, max, acc) when is_map(map) do
    if depth > max, do: throw(:slow)
    # No schema object has more than 32 fields, so a valid one is a small
    # map, whose pairs :maps.to_list/1 returns in iteration (key) order, as
    # JSON.encode!/1 writes them, in one call.
    if map_size(map) > 32, do: throw(:slow)
    pairs(:maps.to_list(map), map, id, required, params, depth, max, acc, ?{)
  end

  defp object(_value, _plan, _params, _depth, _max, _acc), do: throw(:slow)

  # Every key must be a field of the object (field/2 throws otherwise), and
  # all `required` of them must be there.
  defp pairs([{key, value} | rest], map, id, required, params, depth, max, acc, sep) do
    {prefix, plan, flag} = field(id, key)
    acc = value(value, plan, params, depth + 1, max, acc, sep, prefix)

    case flag do
      true ->
        pairs(rest, map, id, required - 1, params, depth, max, acc, ?,)

      false ->
        pairs(rest, map, id, required, params, depth, max, acc, ?,)

      :task_ref ->
        if not is_map_key(map, "project_ref"), do: throw(:slow)
        pairs(rest, map, id, required, params, depth, max, acc, ?,)
    end
  end

  defp pairs([], _map, _id, 0, _params, _depth, _max, acc, ?{), do: <<acc::binary, "{}">>
  defp pairs([], _map, _id, 0, _params, _depth, _max, acc, ?,), do: <<acc::binary, ?}>>
  defp pairs([], _map, _id, _missing, _params, _depth, _max, _acc, _sep), do: throw(:slow)

  # Writes the separator (`sep`: `{`, `[` or `,`), the field's `"key":`
  # (`prefix`, empty in an array) and the value, a scalar in one append.
  defp value(value, :id, _params, _depth, _max, acc, sep, prefix)
       when is_binary(value) and byte_size(value) in 1..@max_id_bytes,
       do: string(value, acc, sep, prefix)

  defp value(value, :text, _params, _depth, _max, acc, sep, prefix) when is_binary(value),
    do: string(value, acc, sep, prefix)

  defp value(value, :timestamp, _params, _depth, _max, acc, sep, prefix) when is_binary(value) do
    if Validator.timestamp?(value),
      do: <<acc::binary, sep, prefix::binary, ?", value::binary, ?">>,
      else: throw(:slow)
  end

  defp value(value, :cursor, _params, _depth, _max, acc, sep, prefix)
       when is_integer(value) and value >= 0,
       do: <<acc::binary, sep, prefix::binary, Integer.to_string(value)::binary>>

  defp value(value, :position, _params, _depth, _max, acc, sep, prefix)
       when is_integer(value) and value >= 1,
       do: <<acc::binary, sep, prefix::binary, Integer.to_string(value)::binary>>

  # No params or envelope field is a boolean (only results have them, and
  # the encoder writes a result as free-form JSON), so :boolean has no
  # clause: a plan with one would take the validator's path.

  # Constants and enum values are schema strings (checked when the plans
  # are built), written as they are.
  defp value(value, {:const, value}, _params, _depth, _max, acc, sep, prefix),
    do: <<acc::binary, sep, prefix::binary, ?", value::binary, ?">>

  defp value(value, {:enum, values}, _params, _depth, _max, acc, sep, prefix)
       when is_map_key(values, value),
       do: <<acc::binary, sep, prefix::binary, ?", value::binary, ?">>

  defp value(value, {:list, type, min, max_items}, _params, depth, max, acc, sep, prefix)
       when is_list(value) do
    if depth > max, do: throw(:slow)
    {acc, count} = items(value, type, depth + 1, max, <<acc::binary, sep, prefix::binary>>, ?[, 0)
    if count < min or count > max_items, do: throw(:slow)
    acc
  end

  defp value(value, {:object, _, _} = plan, _params, depth, max, acc, sep, prefix),
    do: object(value, plan, nil, depth, max, <<acc::binary, sep, prefix::binary>>)

  defp value(value, :params, params, depth, max, acc, sep, prefix) when params != nil,
    do: object(value, params, nil, depth, max, <<acc::binary, sep, prefix::binary>>)

  defp value(value, type, _params, depth, max, acc, sep, prefix)
       when is_map(value) and type in [:json_object, :result],
       do: json(value, depth, max, <<acc::binary, sep, prefix::binary>>)

  defp value(_value, _type, _params, _depth, _max, _acc, _sep, _prefix), do: throw(:slow)

  defp items([item | rest], type, depth, max, acc, sep, count) do
    acc = value(item, type, nil, depth, max, acc, sep, "")
    items(rest, type, depth, max, acc, ?,, count + 1)
  end

  defp items([], _type, _depth, _max, acc, ?[, 0), do: {<<acc::binary, "[]">>, 0}
  defp items([], _type, _depth, _max, acc, _sep, count), do: {<<acc::binary, ?]>>, count}
  # An improper list ([1 | 2]) is not JSON.
  defp items(_tail, _type, _depth, _max, _acc, _sep, _count), do: throw(:slow)

  # Free-form JSON (host payloads, results inside a response envelope):
  # string keys, UTF-8 strings, numbers, booleans, null, bounded depth.
  defp json(value, _depth, _max, acc) when is_binary(value), do: string(value, acc)

  defp json(value, _depth, _max, acc) when is_integer(value),
    do: <<acc::binary, Integer.to_string(value)::binary>>

  defp json(value, _depth, _max, acc) when is_float(value),
    do: <<acc::binary, :erlang.float_to_binary(value, [:short])::binary>>

  defp json(true, _depth, _max, acc), do: <<acc::binary, "true">>
  defp json(false, _depth, _max, acc), do: <<acc::binary, "false">>
  defp json(nil, _depth, _max, acc), do: <<acc::binary, "null">>

  defp json(value, depth, max, acc) when is_map(value) do
    if depth > max, do: throw(:slow)
    json_pairs(:maps.next(:maps.iterator(value)), depth + 1, max, acc, ?{)
  end

  defp json(value, depth, max, acc) when is_list(value) do
    if depth > max, do: throw(:slow)
    json_items(value, depth + 1, max, acc, ?[)
  end

  defp json(_value, _depth, _max, _acc), do: throw(:slow)

  defp json_pairs({key, value, iter}, depth, max, acc, sep) when is_binary(key) do
    acc = string(key, <<acc::binary, sep>>)
    acc = json(value, depth, max, <<acc::binary, ?:>>)
    json_pairs(:maps.next(iter), depth, max, acc, ?,)
  end

  defp json_pairs(:none, _depth, _max, acc, ?{), do: <<acc::binary, "{}">>
  defp json_pairs(:none, _depth, _max, acc, _sep), do: <<acc::binary, ?}>>
  defp json_pairs(_non_string_key, _depth, _max, _acc, _sep), do: throw(:slow)

  defp json_items([item | rest], depth, max, acc, sep) do
    acc = json(item, depth, max, <<acc::binary, sep>>)
    json_items(rest, depth, max, acc, ?,)
  end

  defp json_items([], _depth, _max, acc, ?[), do: <<acc::binary, "[]">>
  defp json_items([], _depth, _max, acc, _sep), do: <<acc::binary, ?]>>
  defp json_items(_improper_tail, _depth, _max, _acc, _sep), do: throw(:slow)

  # OTP's escaping, which also rejects invalid UTF-8 (caught in encode/2).
  # A string that needs no escape comes back as [?", string, ?"] and is
  # appended as it is.
  defp string(string, acc) do
    case :json.encode_binary(string) do
      [?", ^string, ?"] -> <<acc::binary, ?", string::binary, ?">>
      escaped -> <<acc::binary, IO.iodata_to_binary(escaped)::binary>>
    end
  end

  # The same after a separator byte and a field's prefix, in one append.
  defp string(string, acc, sep, prefix) do
    case :json.encode_binary(string) do
      [?", ^string, ?"] -> <<acc::binary, sep, prefix::binary, ?", string::binary, ?">>
      escaped -> <<acc::binary, sep, prefix::binary, IO.iodata_to_binary(escaped)::binary>>
    end
  end
end
