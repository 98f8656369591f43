defmodule SamgitaProtocol.Schema.Checker do
  @moduledoc false
  # The validator's fast path: answers whether a message (or a result) is
  # valid, and nothing else.
  #
  # Every message the core sends or receives is validated, most of them
  # valid, so `Validator` asks this module first and only walks the message
  # again itself, with paths and messages, to name the error when this
  # module says `:slow`. That keeps this walk lean: no paths, no error
  # values, objects checked by direct lookups of their schema keys (present
  # ones counted against `map_size/1`, which also rejects unknown and
  # non-string keys; walking the pairs against generated clauses, as
  # `Schema.Encoder` does because it must write pairs in order, was no
  # faster here and allocated seven times as much), and for decoded terms
  # (`trusted`) no UTF-8 checks, which the decoder already made. Depth is checked at every container, so
  # `SamgitaProtocol.Codec` relies on this walk to bound the depth of small
  # decoded messages.
  #
  # It is sound, not complete: `:ok` only where `Validator` would accept;
  # anything unusual may be `:slow`. The validator's differential tests hold
  # the two equal.

  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.{Plan, Validator}

  @max_id_bytes Schema.max_id_bytes()

  # -- plans, computed at compile time -------------------------------------
  #
  # `Schema.Plan` resolves the types (references, enums, :notification, the
  # envelope placeholders :params and :result); this module looks fields up
  # by key, so each `{:object, id, required_count}` of a plan is inlined as
  # {:object, required, optional, task_ref?} with required and optional as
  # [{key, plan}].

  # The fields `message/3` has already checked are left out of the envelopes.
  # A response carries result or error and rarely anything else: those come
  # first, so the optional walk usually stops after one lookup.
  envelopes =
    for {:object, required, optional} <- Plan.envelopes() do
      prechecked = ["schema_version", "type", "method"]
      required = Enum.reject(required, fn {key, _} -> key in prechecked end)
      {first, rest} = Enum.split_with(optional, fn {key, _} -> key in ["result", "error"] end)
      {:object, required, first ++ rest}
    end

  methods = Schema.methods()

  types =
    [{:ref, "error"} | envelopes] ++ Enum.flat_map(methods, &[&1.params, &1.result || :none])

  {plans, fields} = Plan.build(types, Schema.definitions())
  fields_by_object = Enum.group_by(fields, &elem(&1, 0))

  inline = fn
    inline, {:object, id, _required_count} ->
      {required, optional} =
        fields_by_object
        |> Map.get(id, [])
        |> Enum.split_with(fn {_id, _key, _plan, flag} -> flag == true end)

      pairs = fn fields ->
        Enum.map(fields, fn {_, key, plan, _} -> {key, inline.(inline, plan)} end)
      end

      task_ref? = Enum.any?(optional, &match?({_, _, _, :task_ref}, &1))
      {:object, pairs.(required), pairs.(optional), task_ref?}

    inline, {:list, plan, min, max} ->
      {:list, inline.(inline, plan), min, max}

    _inline, plan ->
      plan
  end

  [error, request, mutation, response, notification | method_plans] =
    Enum.map(plans, &inline.(inline, &1))

  @error_plan error
  @request_envelope request
  @mutation_envelope mutation
  @response_envelope response
  @notification_envelope notification

  # One clause per method name (see Schema.method/1).
  for {spec, [params, result]} <- Enum.zip(methods, Enum.chunk_every(method_plans, 2)) do
    result = if spec.result, do: result
    defp method(unquote(spec.method)), do: unquote(Macro.escape({spec, params, result}))
  end

  defp method(_name), do: nil

  # The prechecked envelope fields, counted by object/6.
  @request_prechecked 3
  @notification_prechecked 3
  @response_prechecked 2

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
  #
  # The commonest envelopes carry none of the optional fields: matched with
  # one pattern of all their fields and their exact size (every other key is
  # then absent), they skip the field-by-field walk, which looks each key up
  # on its own. Anything else takes the general clause.
  defp message(
         %{
           "schema_version" => "1.0",
           "type" => "request",
           "id" => id,
           "correlation_id" => correlation_id,
           "method" => method,
           "params" => params
         } = message,
         base,
         mode
       )
       when map_size(message) == 6 do
    envelope_ids(id, correlation_id, base, mode)

    case method(method) do
      {%{kind: :request, mutation: false} = spec, plan, _} ->
        value(params, :params, plan, base + 2, mode)
        {:ok, :request, spec}

      _ ->
        throw(:slow)
    end
  end

  defp message(
         %{
           "schema_version" => "1.0",
           "type" => "response",
           "id" => id,
           "correlation_id" => correlation_id
         } = message,
         base,
         mode
       )
       when map_size(message) == 5 do
    envelope_ids(id, correlation_id, base, mode)

    case message do
      %{"result" => result} -> value(result, :result, nil, base + 2, mode)
      %{"error" => error} -> value(error, @error_plan, nil, base + 2, mode)
      %{} -> throw(:slow)
    end

    {:ok, :response, nil}
  end

  defp message(
         %{
           "schema_version" => "1.0",
           "type" => "notification",
           "method" => method,
           "params" => params
         } = message,
         base,
         {max_depth, _strings?} = mode
       )
       when map_size(message) == 4 do
    if base + 1 > max_depth, do: throw(:slow)

    case method(method) do
      {%{kind: :notification} = spec, plan, _} ->
        value(params, :params, plan, base + 2, mode)
        {:ok, :notification, spec}

      _ ->
        throw(:slow)
    end
  end

  defp message(%{"schema_version" => "1.0", "type" => type} = message, base, mode) do
    case type do
      "request" -> request(message, base, mode)
      "response" -> response(message, base, mode)
      "notification" -> notification(message, base, mode)
      _ -> throw(:slow)
    end
  end

  defp message(_message, _base, _mode), do: throw(:slow)

  defp envelope_ids(id, correlation_id, base, {max_depth, _strings?} = mode) do
    if base + 1 > max_depth, do: throw(:slow)
    value(id, :id, nil, base + 2, mode)
    value(correlation_id, :id, nil, base + 2, mode)
  end

  defp request(%{"method" => method} = message, base, mode) do
    case method(method) do
      {%{kind: :request, mutation: mutation} = spec, params, _} ->
        # The envelope decides command_id: required for a mutation, an
        # unknown field otherwise.
        envelope = if mutation, do: @mutation_envelope, else: @request_envelope
        object(message, envelope, @request_prechecked, params, base + 1, mode)
        {:ok, :request, spec}

      _ ->
        throw(:slow)
    end
  end

  defp request(_message, _base, _mode), do: throw(:slow)

  defp response(message, base, mode) do
    case message do
      %{"result" => _, "error" => _} -> throw(:slow)
      %{"result" => result} when is_map(result) -> :ok
      %{"error" => _} -> :ok
      %{} -> throw(:slow)
    end

    object(message, @response_envelope, @response_prechecked, nil, base + 1, mode)
    {:ok, :response, nil}
  end

  defp notification(%{"method" => method} = message, base, mode) do
    case method(method) do
      {%{kind: :notification} = spec, params, _} ->
        if is_map_key(message, "stream_id") != is_map_key(message, "cursor"), do: throw(:slow)
        object(message, @notification_envelope, @notification_prechecked, params, base + 1, mode)
        {:ok, :notification, spec}

      _ ->
        throw(:slow)
    end
  end

  defp notification(_message, _base, _mode), do: throw(:slow)

  # `present` starts at the number of fields already checked; `params` is
  # the method's params plan inside an envelope, nil below it.
  defp object(map, {:object, required, optional, task_ref?}, present, params, depth, mode)
       when is_map(map) do
    {max_depth, _strings?} = mode
    if depth > max_depth, do: throw(:slow)

    case required(required, map, present, params, depth + 1, mode) do
      # No optional field present, so no task_ref either.
      present when present == map_size(map) ->
        :ok

      present ->
        present = optional(optional, map, present, params, depth + 1, mode)
        if present != map_size(map), do: throw(:slow)

        if task_ref? and is_map_key(map, "task_ref") and not is_map_key(map, "project_ref"),
          do: throw(:slow)

        :ok
    end
  end

  defp object(_value, _plan, _present, _params, _depth, _mode), do: throw(:slow)

  defp required([{key, plan} | rest], map, present, params, depth, mode) do
    case map do
      %{^key => value} ->
        value(value, plan, params, depth, mode)
        required(rest, map, present + 1, params, depth, mode)

      %{} ->
        throw(:slow)
    end
  end

  defp required([], _map, present, _params, _depth, _mode), do: present

  # Most objects carry no optional field: stop once every key is counted.
  defp optional(_fields, map, present, _params, _depth, _mode) when map_size(map) == present,
    do: present

  defp optional([{key, plan} | rest], map, present, params, depth, mode) do
    case map do
      %{^key => value} ->
        value(value, plan, params, depth, mode)
        optional(rest, map, present + 1, params, depth, mode)

      %{} ->
        optional(rest, map, present, params, depth, mode)
    end
  end

  defp optional([], _map, present, _params, _depth, _mode), do: present

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

  defp value(value, {:object, _, _, _} = plan, _params, depth, mode),
    do: object(value, plan, 0, nil, depth, mode)

  defp value(value, :params, params, depth, mode) when params != nil,
    do: object(value, params, 0, nil, depth, mode)

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
