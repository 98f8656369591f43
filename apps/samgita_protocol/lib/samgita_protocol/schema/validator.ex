defmodule SamgitaProtocol.Schema.Validator do
  @moduledoc false
  # Runtime validation of messages against `SamgitaProtocol.Schema`.
  #
  # `trusted: true` means the term came out of our own JSON decoder: keys are
  # strings, strings are valid UTF-8, depth is already bounded. Terms handed
  # in by callers (`trusted: false`) are additionally walked for JSON-ness,
  # UTF-8 and depth, because they did not pass through the decoder.
  #
  # Checks throw `{:invalid, %Error{}}` on the first violation; `run/1` turns
  # that into a return value so no exception escapes.

  alias SamgitaProtocol.{Error, Schema}

  @max_id_bytes Schema.max_id_bytes()

  @type opts :: %{trusted: boolean(), max_depth: pos_integer()}

  @doc false
  @spec message(term(), opts()) ::
          {:ok, :request | :response | :notification, Schema.method_spec() | nil}
          | {:error, Error.t()}
  def message(message, opts), do: run(fn -> check_message(message, opts) end)

  @doc false
  # Validates a result object against a method's result schema. Violations
  # become `:invalid_result` with the original reason in `data`.
  @spec result(Schema.method_spec(), term(), opts()) :: :ok | {:error, Error.t()}
  def result(%{result: type}, result, opts) do
    case run(fn -> check(result, type, ["result"], 2, opts) end) do
      {:ok, _} ->
        :ok

      {:error, %Error{} = e} ->
        data = Map.put(e.data || %{}, "reason", Atom.to_string(e.code))
        {:error, %{e | code: :invalid_result, data: data}}
    end
  end

  defp run(fun) do
    case fun.() do
      {kind, spec} -> {:ok, kind, spec}
      :ok -> {:ok, nil}
    end
  catch
    {:invalid, %Error{} = error} -> {:error, error}
  end

  defp invalid(code, message, path, extra \\ %{}) do
    throw({:invalid, Error.peer(code, message, Map.put(extra, "path", pointer(path)))})
  end

  defp base(opts), do: Map.get(opts, :base, 0)

  defp pointer([]), do: ""
  defp pointer(path), do: "/" <> Enum.join(Enum.reverse(path), "/")

  # -- envelopes -------------------------------------------------------------

  defp check_message(message, opts) when is_map(message) do
    case Map.fetch(message, "schema_version") do
      {:ok, "1.0"} ->
        :ok

      {:ok, _} ->
        invalid(:unsupported_version, "schema_version must be \"1.0\"", ["schema_version"])

      :error ->
        invalid(:missing_field, "schema_version is required", ["schema_version"])
    end

    case Map.fetch(message, "type") do
      {:ok, "request"} ->
        check_request(message, opts)

      {:ok, "response"} ->
        check_response(message, opts)

      {:ok, "notification"} ->
        check_notification(message, opts)

      {:ok, _} ->
        invalid(:invalid_type, "type must be request, response or notification", ["type"])

      :error ->
        invalid(:missing_field, "type is required", ["type"])
    end
  end

  defp check_message(_message, _opts),
    do: invalid(:invalid_message, "a message must be a JSON object", [])

  defp check_request(message, opts) do
    spec = lookup_method(message, :request)

    cond do
      spec.mutation and not is_map_key(message, "command_id") ->
        invalid(:missing_command_id, "#{spec.method} is a mutation and requires command_id", [
          "command_id"
        ])

      not spec.mutation and is_map_key(message, "command_id") ->
        invalid(
          :unexpected_command_id,
          "#{spec.method} is not a mutation; command_id is not allowed",
          [
            "command_id"
          ]
        )

      true ->
        :ok
    end

    {required, optional} = Schema.envelope(:request, spec)
    check_params_object(message)
    check_fields(message, required, optional, [], base(opts) + 1, opts)
    check(message["params"], spec.params, ["params"], base(opts) + 2, opts)
    {:request, spec}
  end

  defp check_response(message, opts) do
    case {Map.fetch(message, "result"), Map.fetch(message, "error")} do
      {{:ok, _}, {:ok, _}} ->
        invalid(:invalid_response, "a response carries exactly one of result or error", [])

      {:error, :error} ->
        invalid(:invalid_response, "a response carries exactly one of result or error", [])

      {{:ok, result}, :error} when not is_map(result) ->
        invalid(:invalid_response, "result must be an object", ["result"])

      _ ->
        :ok
    end

    {required, optional} = Schema.envelope(:response, nil)
    check_fields(message, required, optional, [], base(opts) + 1, opts)
    {:response, nil}
  end

  defp check_notification(message, opts) do
    spec = lookup_method(message, :notification)

    if is_map_key(message, "stream_id") != is_map_key(message, "cursor") do
      invalid(:unpaired_stream_position, "stream_id and cursor must appear together", [
        if(is_map_key(message, "cursor"), do: "stream_id", else: "cursor")
      ])
    end

    {required, optional} = Schema.envelope(:notification, spec)
    check_params_object(message)
    check_fields(message, required, optional, [], base(opts) + 1, opts)
    check(message["params"], spec.params, ["params"], base(opts) + 2, opts)
    {:notification, spec}
  end

  defp lookup_method(message, kind) do
    case Map.fetch(message, "method") do
      {:ok, name} when is_binary(name) ->
        case Schema.method(name) do
          %{kind: ^kind} = spec -> spec
          %{} -> invalid(:unknown_method, "#{name} is not a #{kind} method", ["method"])
          nil -> invalid(:unknown_method, "unknown method", ["method"])
        end

      {:ok, _} ->
        invalid(:invalid_field, "method must be a string", ["method"])

      :error ->
        invalid(:missing_field, "method is required", ["method"])
    end
  end

  defp check_params_object(message) do
    case Map.fetch(message, "params") do
      {:ok, params} when is_map(params) -> :ok
      {:ok, _} -> invalid(:invalid_params, "params must be an object", ["params"])
      :error -> invalid(:missing_field, "params is required", ["params"])
    end
  end

  # -- types -----------------------------------------------------------------

  defp check(value, :id, path, _depth, opts) do
    check_string(value, path, opts)

    if byte_size(value) in 1..@max_id_bytes do
      :ok
    else
      invalid(:invalid_field, "expected a string of 1 to #{@max_id_bytes} UTF-8 bytes", path, %{
        "bytes" => byte_size(value)
      })
    end
  end

  # Envelope placeholders: params are checked against the method's own
  # definition; a result only with its pending request (Contract), but a
  # caller-built result must still be plain JSON.
  defp check(_value, :params, _path, _depth, _opts), do: :ok
  defp check(_value, :result, _path, _depth, %{trusted: true}), do: :ok
  defp check(value, :result, path, depth, opts), do: check_json(value, path, depth, opts)

  defp check(value, :text, path, _depth, opts), do: check_string(value, path, opts)

  defp check(value, :timestamp, path, _depth, opts) do
    check_string(value, path, opts)

    if timestamp?(value),
      do: :ok,
      else: invalid(:invalid_field, "expected a UTC ISO-8601 timestamp ending in Z", path)
  end

  defp check(value, :cursor, path, _depth, _opts) do
    if is_integer(value) and value >= 0,
      do: :ok,
      else: invalid(:invalid_field, "expected an integer >= 0", path)
  end

  defp check(value, :position, path, _depth, _opts) do
    if is_integer(value) and value >= 1,
      do: :ok,
      else: invalid(:invalid_field, "expected an integer >= 1", path)
  end

  defp check(value, :boolean, path, _depth, _opts) do
    if is_boolean(value), do: :ok, else: invalid(:invalid_field, "expected a boolean", path)
  end

  defp check(value, {:const, expected}, path, _depth, _opts) do
    if value === expected,
      do: :ok,
      else: invalid(:invalid_field, "expected #{inspect(expected)}", path)
  end

  defp check(value, {:enum, values}, path, _depth, _opts) do
    if is_binary(value) and value in values,
      do: :ok,
      else: invalid(:invalid_field, "expected one of: #{Enum.join(values, ", ")}", path)
  end

  defp check(value, {:list, type, min, max}, path, depth, opts) when is_list(value) do
    check_depth(depth, path, opts)
    count = proper_length(value, path)

    unless count >= min and count <= max do
      invalid(:invalid_field, "expected #{min} to #{max} items", path, %{"items" => count})
    end

    value
    |> Enum.with_index()
    |> Enum.each(fn {item, i} ->
      check(item, type, [Integer.to_string(i) | path], depth + 1, opts)
    end)
  end

  defp check(_value, {:list, _, _, _}, path, _depth, _opts),
    do: invalid(:invalid_field, "expected an array", path)

  defp check(value, {:object, required, optional}, path, depth, opts) when is_map(value) do
    check_fields(value, required, optional, path, depth, opts)
  end

  defp check(_value, {:object, _, _}, path, _depth, _opts),
    do: invalid(:invalid_field, "expected an object", path)

  defp check(value, :json_object, _path, _depth, %{trusted: true}) when is_map(value), do: :ok

  defp check(value, :json_object, path, depth, opts) when is_map(value),
    do: check_json(value, path, depth, opts)

  defp check(_value, :json_object, path, _depth, _opts),
    do: invalid(:invalid_field, "expected an object", path)

  defp check(value, {:ref, "notification"}, path, depth, opts) do
    check_depth(depth, path, opts)

    case check_message(value, Map.put(opts, :base, depth - 1)) do
      {:notification, _} -> :ok
      _ -> invalid(:invalid_field, "expected a notification", path)
    end
  catch
    {:invalid, %Error{data: data} = e} ->
      inner = pointer(path) <> Map.get(data || %{}, "path", "")
      throw({:invalid, %{e | data: Map.put(data || %{}, "path", inner)}})
  end

  defp check(value, {:ref, name}, path, depth, opts),
    do: check(value, Map.fetch!(Schema.definitions(), name), path, depth, opts)

  defp check_string(value, path, %{trusted: trusted}) do
    cond do
      not is_binary(value) -> invalid(:invalid_field, "expected a string", path)
      trusted or String.valid?(value) -> :ok
      true -> invalid(:invalid_utf8, "string is not valid UTF-8", path)
    end
  end

  defp check_depth(depth, path, %{max_depth: max}) do
    if depth > max,
      do: invalid(:depth_exceeded, "nesting is deeper than #{max}", path, %{"max" => max})
  end

  defp check_fields(map, required, optional, path, depth, opts) do
    check_depth(depth, path, opts)

    # Caller-built maps: report atom keys as such, not as missing fields.
    unless opts.trusted or Enum.all?(Map.keys(map), &is_binary/1) do
      invalid(:invalid_key, "object keys must be strings", path)
    end

    present =
      Enum.reduce(required, 0, fn {key, type}, n ->
        case Map.fetch(map, key) do
          {:ok, value} ->
            check(value, type, [key | path], depth + 1, opts)
            n + 1

          :error ->
            invalid(:missing_field, "#{key} is required", [key | path])
        end
      end)

    present =
      Enum.reduce(optional, present, fn {key, type}, n ->
        case Map.fetch(map, key) do
          {:ok, value} ->
            check(value, type, [key | path], depth + 1, opts)
            n + 1

          :error ->
            n
        end
      end)

    if map_size(map) != present, do: unknown_field(map, required, optional, path)

    if is_map_key(map, "task_ref") and not is_map_key(map, "project_ref") do
      invalid(:task_ref_without_project_ref, "task_ref requires project_ref", ["task_ref" | path])
    end

    :ok
  end

  defp unknown_field(map, required, optional, path) do
    known = MapSet.new(required ++ optional, &elem(&1, 0))

    case map |> Map.keys() |> Enum.reject(&MapSet.member?(known, &1)) |> Enum.sort() do
      [key | _] when is_binary(key) ->
        invalid(:unknown_field, "unknown field", [key | path], %{"field" => key})

      _ ->
        invalid(:invalid_key, "object keys must be strings", path)
    end
  end

  # Free-form objects handed in by callers: JSON terms only, string keys,
  # valid UTF-8, bounded depth.
  defp check_json(value, path, depth, opts) when is_map(value) do
    check_depth(depth, path, opts)

    Enum.each(value, fn
      {key, v} when is_binary(key) ->
        unless String.valid?(key), do: invalid(:invalid_utf8, "key is not valid UTF-8", path)
        check_json(v, [key | path], depth + 1, opts)

      {_key, _} ->
        invalid(:invalid_key, "object keys must be strings", path)
    end)
  end

  defp check_json(value, path, depth, opts) when is_list(value) do
    check_depth(depth, path, opts)
    proper_length(value, path)

    value
    |> Enum.with_index()
    |> Enum.each(fn {v, i} -> check_json(v, [Integer.to_string(i) | path], depth + 1, opts) end)
  end

  defp check_json(value, path, _depth, _opts) when is_binary(value) do
    if String.valid?(value),
      do: :ok,
      else: invalid(:invalid_utf8, "string is not valid UTF-8", path)
  end

  defp check_json(value, _path, _depth, _opts)
       when is_number(value) or is_boolean(value) or is_nil(value),
       do: :ok

  defp check_json(_value, path, _depth, _opts),
    do: invalid(:invalid_field, "value is not representable as JSON", path)

  # Caller-built terms may hold improper lists ([1 | 2]), which are not JSON.
  defp proper_length(list, path), do: proper_length(list, path, 0)
  defp proper_length([], _path, n), do: n
  defp proper_length([_ | rest], path, n), do: proper_length(rest, path, n + 1)
  defp proper_length(_tail, path, _n), do: invalid(:invalid_field, "expected a proper list", path)

  # YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z, and a real calendar date/time.
  defp timestamp?(
         <<_::binary-size(4), ?-, _::binary-size(2), ?-, _::binary-size(2), ?T, _::binary-size(2),
           ?:, _::binary-size(2), ?:, _::binary-size(2), rest::binary>> = value
       ) do
    digits_ok?(binary_part(value, 0, 19)) and fraction_ok?(rest) and
      match?({:ok, _, 0}, DateTime.from_iso8601(value))
  end

  defp timestamp?(_), do: false

  defp digits_ok?(<<>>), do: true
  defp digits_ok?(<<c, rest::binary>>) when c in ?0..?9 or c in [?-, ?T, ?:], do: digits_ok?(rest)
  defp digits_ok?(_), do: false

  defp fraction_ok?("Z"), do: true

  defp fraction_ok?(<<?., rest::binary>>) when byte_size(rest) in 2..10 do
    {digits, "Z"} = String.split_at(rest, -1)
    digits != "" and digits_ok_strict?(digits)
  rescue
    MatchError -> false
  end

  defp fraction_ok?(_), do: false

  defp digits_ok_strict?(<<>>), do: true
  defp digits_ok_strict?(<<c, rest::binary>>) when c in ?0..?9, do: digits_ok_strict?(rest)
  defp digits_ok_strict?(_), do: false
end
