defmodule SamgitaProtocol.Schema.Validator do
  @moduledoc false
  # Runtime validation of messages against `SamgitaProtocol.Schema`.
  #
  # `trusted: true` means the term came out of our own JSON decoder: keys are
  # strings, strings are valid UTF-8, depth is already bounded. Terms handed
  # in by callers (`trusted: false`) are additionally walked for JSON-ness,
  # UTF-8 and depth, because they did not pass through the decoder.
  #
  # Checks throw `{:invalid, %Error{}}` on the first violation; `message/2`
  # and `result/3` turn that into a return value so no exception escapes.
  #
  # Every message is validated when decoded, and caller-built messages when
  # built and again when encoded, so this is on the hot path: envelope shapes
  # are computed once at compile time, fields are looked up with map patterns
  # and walked by plain recursion (no closures, no {:ok, value} tuples),
  # optional fields are no longer looked up once every key is accounted for,
  # list indices stay integers in paths until an error renders the pointer,
  # and timestamps are checked without DateTime parsing.

  alias SamgitaProtocol.{Error, Schema}
  alias SamgitaProtocol.Schema.Checker

  @max_id_bytes Schema.max_id_bytes()
  @definitions Schema.definitions()

  # By the time `check_fields/7` walks an envelope, `check_message/3`,
  # `lookup_method/2` and `check_params_object/1` have already found these
  # fields present and valid (`params` is only a placeholder there), so the
  # envelope walk just counts them instead of checking them again.
  prechecked = ["schema_version", "type", "method", "params"]

  envelope = fn kind, spec ->
    {required, optional} = Schema.envelope(kind, spec)
    {checked, rest} = Enum.split_with(required, fn {key, _} -> key in prechecked end)
    {checked, rest, optional}
  end

  @request_envelope envelope.(:request, %{mutation: false})
  @mutation_envelope envelope.(:request, %{mutation: true})
  @response_envelope envelope.(:response, nil)
  @notification_envelope envelope.(:notification, nil)

  @type opts :: %{trusted: boolean(), max_depth: pos_integer()}

  @doc false
  @spec message(term(), opts()) ::
          {:ok, :request | :response | :notification, Schema.method_spec() | nil}
          | {:error, Error.t()}
  def message(message, opts) do
    case Checker.message(message, mode(opts)) do
      {:ok, _kind, _spec} = ok -> ok
      :slow -> full_message(message, opts)
    end
  end

  @doc false
  # The full walk alone, which names the error (tests compare it with the
  # fast path).
  @spec full_message(term(), opts()) ::
          {:ok, :request | :response | :notification, Schema.method_spec() | nil}
          | {:error, Error.t()}
  def full_message(message, opts) do
    {kind, spec} = check_message(message, 0, opts)
    {:ok, kind, spec}
  catch
    {:invalid, %Error{} = error} -> {:error, error}
  end

  # What the fast path (Schema.Checker) must check: a decoded term's strings
  # were checked for UTF-8 by the decoder.
  defp mode(%{trusted: trusted, max_depth: max_depth}), do: {max_depth, not trusted}

  @doc false
  # Validates a result object against a method's result schema. Violations
  # become `:invalid_result` with the original reason in `data`.
  @spec result(Schema.method_spec(), term(), opts()) :: :ok | {:error, Error.t()}
  def result(%{result: type} = spec, result, opts) do
    with :slow <- Checker.result(spec, result, mode(opts)) do
      full_result(type, result, opts)
    end
  end

  @doc false
  @spec full_result(Schema.type(), term(), opts()) :: :ok | {:error, Error.t()}
  def full_result(type, result, opts) do
    check(result, type, ["result"], 2, opts)
    :ok
  catch
    {:invalid, %Error{} = e} ->
      data = Map.put(e.data || %{}, "reason", Atom.to_string(e.code))
      {:error, %{e | code: :invalid_result, data: data}}
  end

  # Every check exits through here: the first violation is thrown and caught
  # by message/2 or result/2, so a failing check never returns.
  @spec invalid(Error.code(), String.t(), list()) :: no_return()
  defp invalid(code, message, path), do: invalid(code, message, path, %{})

  @spec invalid(Error.code(), String.t(), list(), map()) :: no_return()
  defp invalid(code, message, path, extra) do
    throw({:invalid, Error.peer(code, message, Map.put(extra, "path", pointer(path)))})
  end

  # Paths are reversed lists of keys and (integer) list indices.
  defp pointer([]), do: ""
  defp pointer(path), do: "/" <> Enum.join(Enum.reverse(path), "/")

  # -- envelopes -------------------------------------------------------------

  # `base` is the depth of the enclosing value: 0 for a message on the wire,
  # deeper for a notification replayed inside a `stream/resume` result.
  # Fields are looked up with map patterns rather than Map.fetch/2: no remote
  # call and no {:ok, value} tuple, which adds up over a small message.
  defp check_message(message, base, opts) when is_map(message) do
    case message do
      %{"schema_version" => "1.0"} ->
        :ok

      %{"schema_version" => _} ->
        invalid(:unsupported_version, "schema_version must be \"1.0\"", ["schema_version"])

      %{} ->
        invalid(:missing_field, "schema_version is required", ["schema_version"])
    end

    case message do
      %{"type" => "request"} ->
        check_request(message, base, opts)

      %{"type" => "response"} ->
        check_response(message, base, opts)

      %{"type" => "notification"} ->
        check_notification(message, base, opts)

      %{"type" => _} ->
        invalid(:invalid_type, "type must be request, response or notification", ["type"])

      %{} ->
        invalid(:missing_field, "type is required", ["type"])
    end
  end

  defp check_message(_message, _base, _opts),
    do: invalid(:invalid_message, "a message must be a JSON object", [])

  defp check_request(message, base, opts) do
    spec = lookup_method(message, :request)
    command_id? = is_map_key(message, "command_id")

    {checked, required, optional} =
      case spec.mutation do
        true when not command_id? ->
          invalid(:missing_command_id, "#{spec.method} is a mutation and requires command_id", [
            "command_id"
          ])

        false when command_id? ->
          invalid(
            :unexpected_command_id,
            "#{spec.method} is not a mutation; command_id is not allowed",
            ["command_id"]
          )

        true ->
          @mutation_envelope

        false ->
          @request_envelope
      end

    params = check_params_object(message)
    check_fields(message, checked, required, optional, [], base + 1, opts)
    check(params, spec.params, ["params"], base + 2, opts)
    {:request, spec}
  end

  defp check_response(message, base, opts) do
    case message do
      %{"result" => _, "error" => _} ->
        invalid(:invalid_response, "a response carries exactly one of result or error", [])

      %{"result" => result} when not is_map(result) ->
        invalid(:invalid_response, "result must be an object", ["result"])

      %{"result" => _} ->
        :ok

      %{"error" => _} ->
        :ok

      %{} ->
        invalid(:invalid_response, "a response carries exactly one of result or error", [])
    end

    {checked, required, optional} = @response_envelope
    check_fields(message, checked, required, optional, [], base + 1, opts)
    {:response, nil}
  end

  defp check_notification(message, base, opts) do
    spec = lookup_method(message, :notification)

    if is_map_key(message, "stream_id") != is_map_key(message, "cursor") do
      invalid(:unpaired_stream_position, "stream_id and cursor must appear together", [
        if(is_map_key(message, "cursor"), do: "stream_id", else: "cursor")
      ])
    end

    {checked, required, optional} = @notification_envelope
    params = check_params_object(message)
    check_fields(message, checked, required, optional, [], base + 1, opts)
    check(params, spec.params, ["params"], base + 2, opts)
    {:notification, spec}
  end

  defp lookup_method(message, kind) do
    case message do
      %{"method" => name} when is_binary(name) ->
        case Schema.method(name) do
          %{kind: ^kind} = spec -> spec
          %{} -> invalid(:unknown_method, "#{name} is not a #{kind} method", ["method"])
          nil -> invalid(:unknown_method, "unknown method", ["method"])
        end

      %{"method" => _} ->
        invalid(:invalid_field, "method must be a string", ["method"])

      %{} ->
        invalid(:missing_field, "method is required", ["method"])
    end
  end

  defp check_params_object(message) do
    case message do
      %{"params" => params} when is_map(params) -> params
      %{"params" => _} -> invalid(:invalid_params, "params must be an object", ["params"])
      %{} -> invalid(:missing_field, "params is required", ["params"])
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

    check_items(value, type, 0, path, depth + 1, opts)
  end

  defp check(_value, {:list, _, _, _}, path, _depth, _opts),
    do: invalid(:invalid_field, "expected an array", path)

  defp check(value, {:object, required, optional}, path, depth, opts) when is_map(value) do
    check_fields(value, [], required, optional, path, depth, opts)
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

    case check_message(value, depth - 1, opts) do
      {:notification, _} -> :ok
      _ -> invalid(:invalid_field, "expected a notification", path)
    end
  catch
    {:invalid, %Error{data: data} = e} ->
      inner = pointer(path) <> Map.get(data || %{}, "path", "")
      throw({:invalid, %{e | data: Map.put(data || %{}, "path", inner)}})
  end

  defp check(value, {:ref, name}, path, depth, opts),
    do: check(value, Map.fetch!(@definitions, name), path, depth, opts)

  # `[index | path]` without Integer.to_string/1: `pointer/1` renders it.
  defp check_items([item | rest], type, index, path, depth, opts) do
    check(item, type, [index | path], depth, opts)
    check_items(rest, type, index + 1, path, depth, opts)
  end

  defp check_items([], _type, _index, _path, _depth, _opts), do: :ok

  defp check_string(value, path, %{trusted: trusted}) do
    cond do
      not is_binary(value) -> invalid(:invalid_field, "expected a string", path)
      trusted or utf8?(value) -> :ok
      true -> invalid(:invalid_utf8, "string is not valid UTF-8", path)
    end
  end

  # Same answer as the default algorithm, faster on the short, mostly ASCII
  # strings messages are made of.
  defp utf8?(string), do: String.valid?(string, :fast_ascii)

  defp check_depth(depth, path, %{max_depth: max}) do
    if depth > max,
      do: invalid(:depth_exceeded, "nesting is deeper than #{max}", path, %{"max" => max})
  end

  # `checked` are required fields the caller already checked (see the
  # envelope attributes above): they are only counted.
  defp check_fields(map, checked, required, optional, path, depth, opts) do
    check_depth(depth, path, opts)

    # Caller-built maps: report atom keys as such, not as missing fields.
    unless opts.trusted or string_keys?(Map.keys(map)) do
      invalid(:invalid_key, "object keys must be strings", path)
    end

    present = check_required(required, map, length(checked), path, depth + 1, opts)
    present = check_optional(optional, map, present, path, depth + 1, opts)

    if map_size(map) != present, do: unknown_field(map, checked ++ required ++ optional, path)

    if is_map_key(map, "task_ref") and not is_map_key(map, "project_ref") do
      invalid(:task_ref_without_project_ref, "task_ref requires project_ref", ["task_ref" | path])
    end

    :ok
  end

  defp check_required([{key, type} | rest], map, present, path, depth, opts) do
    case map do
      %{^key => value} ->
        check(value, type, [key | path], depth, opts)
        check_required(rest, map, present + 1, path, depth, opts)

      %{} ->
        invalid(:missing_field, "#{key} is required", [key | path])
    end
  end

  defp check_required([], _map, present, _path, _depth, _opts), do: present

  # Once every key of the map is accounted for, the remaining optional
  # fields are absent: most objects carry none, so this usually stops at once.
  defp check_optional(_fields, map, present, _path, _depth, _opts)
       when map_size(map) == present,
       do: present

  defp check_optional([{key, type} | rest], map, present, path, depth, opts) do
    case map do
      %{^key => value} ->
        check(value, type, [key | path], depth, opts)
        check_optional(rest, map, present + 1, path, depth, opts)

      %{} ->
        check_optional(rest, map, present, path, depth, opts)
    end
  end

  defp check_optional([], _map, present, _path, _depth, _opts), do: present

  defp string_keys?([key | rest]) when is_binary(key), do: string_keys?(rest)
  defp string_keys?([]), do: true
  defp string_keys?(_keys), do: false

  @spec unknown_field(map(), list(), list()) :: no_return()
  defp unknown_field(map, fields, path) do
    known = MapSet.new(fields, &elem(&1, 0))

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
    # The iterator visits pairs in the order Enum and :maps.fold/3 do (which
    # decides the first violation reported); for maps over 32 keys it
    # differs from Map.to_list/1.
    check_json_pairs(:maps.next(:maps.iterator(value)), path, depth + 1, opts)
  end

  defp check_json(value, path, depth, opts) when is_list(value) do
    check_depth(depth, path, opts)
    proper_length(value, path)
    check_json_items(value, 0, path, depth + 1, opts)
  end

  defp check_json(value, path, _depth, _opts) when is_binary(value) do
    if utf8?(value),
      do: :ok,
      else: invalid(:invalid_utf8, "string is not valid UTF-8", path)
  end

  defp check_json(value, _path, _depth, _opts)
       when is_number(value) or is_boolean(value) or is_nil(value),
       do: :ok

  defp check_json(_value, path, _depth, _opts),
    do: invalid(:invalid_field, "value is not representable as JSON", path)

  defp check_json_pairs({key, value, next}, path, depth, opts) when is_binary(key) do
    unless utf8?(key), do: invalid(:invalid_utf8, "key is not valid UTF-8", path)
    check_json(value, [key | path], depth, opts)
    check_json_pairs(:maps.next(next), path, depth, opts)
  end

  defp check_json_pairs({_key, _value, _next}, path, _depth, _opts),
    do: invalid(:invalid_key, "object keys must be strings", path)

  defp check_json_pairs(:none, _path, _depth, _opts), do: :ok

  defp check_json_items([value | rest], index, path, depth, opts) do
    check_json(value, [index | path], depth, opts)
    check_json_items(rest, index + 1, path, depth, opts)
  end

  defp check_json_items([], _index, _path, _depth, _opts), do: :ok

  # Caller-built terms may hold improper lists ([1 | 2]), which are not JSON;
  # length/1 raises on exactly those.
  defp proper_length(list, path) do
    length(list)
  rescue
    ArgumentError -> invalid(:invalid_field, "expected a proper list", path)
  end

  # YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z, and a real calendar date/time (no leap
  # seconds): what DateTime.from_iso8601/1 accepts with a zero offset,
  # checked by hand because that call alone costs more than validating the
  # rest of a typical message.
  @doc false
  # Also used by `SamgitaProtocol.Schema.Encoder`, which must accept exactly
  # the timestamps this module accepts.
  @spec timestamp?(term()) :: boolean()
  def timestamp?(
        <<year::binary-size(4), ?-, month::binary-size(2), ?-, day::binary-size(2), ?T,
          hour::binary-size(2), ?:, minute::binary-size(2), ?:, second::binary-size(2),
          rest::binary>>
      ) do
    year = digits(year)
    month = digits(month)

    year >= 0 and month in 1..12 and digits(day) in 1..Calendar.ISO.days_in_month(year, month) and
      digits(hour) in 0..23 and digits(minute) in 0..59 and digits(second) in 0..59 and
      fraction_ok?(rest)
  end

  def timestamp?(_), do: false

  # The value of a run of ASCII digits, or -1 when anything else is in it.
  defp digits(binary), do: digits(binary, 0)
  defp digits(<<c, rest::binary>>, n) when c in ?0..?9, do: digits(rest, n * 10 + c - ?0)
  defp digits(<<>>, n), do: n
  defp digits(_, _), do: -1

  # "Z", or "." with 1 to 9 digits and then "Z".
  defp fraction_ok?("Z"), do: true
  defp fraction_ok?(<<?., rest::binary>>), do: fraction_digits?(rest, 0)
  defp fraction_ok?(_), do: false

  defp fraction_digits?(<<c, rest::binary>>, n) when c in ?0..?9 and n < 9,
    do: fraction_digits?(rest, n + 1)

  defp fraction_digits?("Z", n), do: n >= 1
  defp fraction_digits?(_, _), do: false
end
