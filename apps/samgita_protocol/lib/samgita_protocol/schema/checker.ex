defmodule SamgitaProtocol.Schema.Checker do
  @moduledoc false
  # The validator's fast path: answers whether a message (or a result) is
  # valid, and nothing else.
  #
  # Every message the core sends or receives is validated, most of them
  # valid, so `Validator` asks this module first and only walks the message
  # again itself, with paths and messages, to name the error when this
  # module says `:slow`. That keeps this walk lean: no paths, no error
  # values, objects walked pair by pair with each key matched against
  # generated clauses (see `Schema.Plan`), and for decoded terms (`trusted`) no UTF-8 checks,
  # which the decoder already made. Depth is checked at every container, so
  # `SamgitaProtocol.Codec` relies on this walk to bound the depth of small
  # decoded messages.
  #
  # It is sound, not complete: `:ok` only where `Validator` would accept;
  # anything unusual may be `:slow`. The validator's differential tests hold
  # the two equal.

  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.{Plan, Validator}

  @max_id_bytes Schema.max_id_bytes()

  # -- plans, computed at compile time (see Schema.Plan) ---------------------

  # The envelope fields message/3 has already checked are only counted.
  prechecked = ["schema_version", "type", "method"]

  envelope = fn kind, spec ->
    {required, optional} = Schema.envelope(kind, spec)

    required =
      Enum.map(required, fn {key, t} -> if key in prechecked, do: {key, :pre}, else: {key, t} end)

    {:object, required, optional}
  end

  envelopes = [
    envelope.(:request, %{mutation: false}),
    envelope.(:request, %{mutation: true}),
    envelope.(:response, nil),
    envelope.(:notification, nil)
  ]

  methods = Schema.methods()
  method_types = Enum.flat_map(methods, &[&1.params, &1.result || :none])
  {plans, fields} = Plan.build(envelopes ++ method_types, Schema.definitions())
  {[request, mutation, response, notification], method_plans} = Enum.split(plans, 4)

  @request_envelope request
  @mutation_envelope mutation
  @response_envelope response
  @notification_envelope notification

  # One clause per method name (see Schema.method/1).
  for {spec, [params, result]} <- Enum.zip(methods, Enum.chunk_every(method_plans, 2)) do
    defp method(unquote(spec.method)), do: unquote(Macro.escape({spec, params, result}))
  end

  defp method(_name), do: nil

  # One clause per object field; any other key is not in the object.
  for {id, key, plan, flag} <- fields do
    defp field(unquote(id), unquote(key)), do: unquote(Macro.escape({plan, flag}))
  end

  defp field(_object, _key), do: throw(:slow)

  @typedoc """
  How much to check: `{max_depth, check_strings?}`. Decoded terms pass
  `{max_depth, false}` (the decoder checked UTF-8), terms built by callers
  `{max_depth, true}`. Every container is visited, so `:ok` also means the
  term is at most `max_depth` deep.
  """
  @type mode :: {pos_integer(), boolean()}

  @spec message(term(), mode()) ::
          {:ok, :request | :response | :notification, Schema.method_spec() | nil} | :slow
  def message(message, mode) do
    message(message, 0, mode)
  catch
    :slow -> :slow
  end

  # Validates a request's `params` against `spec`'s params schema, as they
  # sit in an envelope (depth 2).
  @spec params(Schema.method_spec(), term(), mode()) :: :ok | :slow
  def params(%{method: method}, params, mode) do
    {_spec, plan, _result} = method(method)
    value(params, :params, plan, 2, mode)
  catch
    :slow -> :slow
  end

  # Validates `result` against the result schema of `spec`'s method.
  @spec result(Schema.method_spec(), term(), mode()) :: :ok | :slow
  def result(%{method: method}, result, mode) do
    {_spec, _params, plan} = method(method)
    value(result, plan, nil, 2, mode)
    :ok
  catch
    :slow -> :slow
  end

  # `base` is the depth of the enclosing value: 0 for a message on the wire,
  # deeper for a notification inside a `stream/resume` result.
  defp message(message, base, mode) do
    case message do
      %{"schema_version" => "1.0", "type" => "request", "method" => method} ->
        request(message, method, base, mode)

      %{"schema_version" => "1.0", "type" => "response"} ->
        response(message, base, mode)

      %{"schema_version" => "1.0", "type" => "notification", "method" => method} ->
        notification(message, method, base, mode)

      _ ->
        throw(:slow)
    end
  end

  # The envelope decides command_id: required for a mutation, unknown
  # otherwise.
  defp request(message, method, base, mode) do
    case method(method) do
      {%{kind: :request, mutation: mutation} = spec, params, _} ->
        envelope = if mutation, do: @mutation_envelope, else: @request_envelope
        object(message, envelope, params, base + 1, mode)
        {:ok, :request, spec}

      _ ->
        throw(:slow)
    end
  end

  defp response(message, base, mode) do
    case message do
      %{"result" => _, "error" => _} -> throw(:slow)
      %{"result" => _} -> :ok
      %{"error" => _} -> :ok
      %{} -> throw(:slow)
    end

    object(message, @response_envelope, nil, base + 1, mode)
    {:ok, :response, nil}
  end

  defp notification(message, method, base, mode) do
    case method(method) do
      {%{kind: :notification} = spec, params, _} ->
        if is_map_key(message, "stream_id") != is_map_key(message, "cursor"), do: throw(:slow)
        object(message, @notification_envelope, params, base + 1, mode)
        {:ok, :notification, spec}

      _ ->
        throw(:slow)
    end
  end

  # `params` is the method's params plan inside an envelope, nil below it.
  defp object(map, {:object, id, required}, params, depth, mode) when is_map(map) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)
    fields(:maps.to_list(map), map, id, required, params, depth + 1, mode)
  end

  defp object(_value, _plan, _params, _depth, _mode), do: throw(:slow)

  # Every key must be a field of the object (field/2 throws otherwise), and
  # all `required` of them must be there.
  defp fields([{key, value} | rest], map, id, required, params, depth, mode) do
    {plan, flag} = field(id, key)
    value(value, plan, params, depth, mode)

    case flag do
      true ->
        fields(rest, map, id, required - 1, params, depth, mode)

      false ->
        fields(rest, map, id, required, params, depth, mode)

      :task_ref ->
        if not is_map_key(map, "project_ref"), do: throw(:slow)
        fields(rest, map, id, required, params, depth, mode)
    end
  end

  defp fields([], _map, _id, 0, _params, _depth, _mode), do: :ok
  defp fields([], _map, _id, _missing, _params, _depth, _mode), do: throw(:slow)

  defp value(_value, :pre, _params, _depth, _mode), do: :ok

  defp value(value, :id, _params, _depth, mode)
       when is_binary(value) and byte_size(value) in 1..@max_id_bytes,
       do: string(value, mode)

  defp value(value, :text, _params, _depth, mode) when is_binary(value), do: string(value, mode)

  defp value(value, :timestamp, _params, _depth, _mode) when is_binary(value) do
    if Validator.timestamp?(value), do: :ok, else: throw(:slow)
  end

  defp value(value, :cursor, _params, _depth, _mode) when is_integer(value) and value >= 0,
    do: :ok

  defp value(value, :position, _params, _depth, _mode) when is_integer(value) and value >= 1,
    do: :ok

  defp value(value, :boolean, _params, _depth, _mode) when is_boolean(value), do: :ok
  defp value(value, {:const, value}, _params, _depth, _mode), do: :ok

  defp value(value, {:enum, values}, _params, _depth, _mode) when is_map_key(values, value),
    do: :ok

  defp value(value, {:list, plan, min, max}, _params, depth, mode) when is_list(value) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)
    count = items(value, plan, depth + 1, mode, 0)
    if count < min or count > max, do: throw(:slow)
    :ok
  end

  defp value(value, {:object, _, _} = plan, _params, depth, mode),
    do: object(value, plan, nil, depth, mode)

  defp value(value, :params, params, depth, mode) when params != nil,
    do: object(value, params, nil, depth, mode)

  defp value(value, :notification, _params, depth, mode) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)

    case message(value, depth - 1, mode) do
      {:ok, :notification, _spec} -> :ok
      _ -> throw(:slow)
    end
  end

  defp value(value, type, _params, depth, mode)
       when is_map(value) and type in [:json_object, :result],
       do: json(value, depth, mode)

  defp value(_value, _plan, _params, _depth, _mode), do: throw(:slow)

  defp items([item | rest], plan, depth, mode, count) do
    value(item, plan, nil, depth, mode)
    items(rest, plan, depth, mode, count + 1)
  end

  defp items([], _plan, _depth, _mode, count), do: count
  defp items(_improper_tail, _plan, _depth, _mode, _count), do: throw(:slow)

  defp string(_string, {_max_depth, false}), do: :ok

  defp string(string, {_max_depth, true}) do
    if String.valid?(string, :fast_ascii), do: :ok, else: throw(:slow)
  end

  # Free-form JSON: bounded depth and, in a caller's term, string keys,
  # UTF-8 and JSON values only (a decoded term has nothing else).
  # Only whether the term is valid matters here, not which pair fails first,
  # so pairs are visited in whatever order is cheapest: a decoded map has
  # string keys, so only its values are walked.
  defp json(value, depth, {max_depth, false} = mode) when is_map(value) do
    if depth > max_depth, do: throw(:slow)
    json_items(:maps.values(value), depth + 1, mode)
  end

  defp json(value, depth, mode) when is_map(value) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)
    json_pairs(:maps.to_list(value), depth + 1, mode)
  end

  defp json(value, depth, mode) when is_list(value) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)
    json_items(value, depth + 1, mode)
  end

  defp json(value, _depth, mode) when is_binary(value), do: string(value, mode)

  defp json(value, _depth, _mode) when is_number(value) or is_boolean(value) or is_nil(value),
    do: :ok

  defp json(_value, _depth, _mode), do: throw(:slow)

  defp json_pairs([{key, value} | rest], depth, mode) when is_binary(key) do
    string(key, mode)
    json(value, depth, mode)
    json_pairs(rest, depth, mode)
  end

  defp json_pairs([], _depth, _mode), do: :ok
  defp json_pairs(_non_string_key, _depth, _mode), do: throw(:slow)

  defp json_items([item | rest], depth, mode) do
    json(item, depth, mode)
    json_items(rest, depth, mode)
  end

  defp json_items([], _depth, _mode), do: :ok
  defp json_items(_improper_tail, _depth, _mode), do: throw(:slow)
end
