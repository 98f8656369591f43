defmodule SamgitaProtocol.Message do
  @moduledoc false
  # Building envelopes and comparing them. Every builder returns a plain map
  # with string keys, ready for `SamgitaProtocol.Codec.encode/2`.

  alias SamgitaProtocol.{Error, Schema}

  @context_keys ["causation_id", "project_ref", "task_ref"]
  @echo_keys ["command_id" | @context_keys]
  @notification_opts [
    :stream_id,
    :cursor,
    :correlation_id,
    :causation_id,
    :project_ref,
    :task_ref
  ]

  @doc false
  def context_keys, do: @context_keys

  @doc false
  def request(id, method, params, []) do
    %{
      "schema_version" => Schema.version(),
      "type" => "request",
      "id" => id,
      "correlation_id" => id,
      "method" => method,
      "params" => params
    }
  end

  def request(id, method, params, opts) do
    %{
      "schema_version" => Schema.version(),
      "type" => "request",
      "id" => id,
      "correlation_id" => Keyword.get(opts, :correlation_id) || id,
      "method" => method,
      "params" => params
    }
    |> put_opt("command_id", opts[:command_id])
    |> put_context(opts)
  end

  @doc false
  def notification(method, params, opts) do
    %{
      "schema_version" => Schema.version(),
      "type" => "notification",
      "method" => method,
      "params" => params
    }
    |> put_opt("stream_id", opts[:stream_id])
    |> put_opt("cursor", opts[:cursor])
    |> put_opt("correlation_id", opts[:correlation_id])
    |> put_context(opts)
  end

  @doc false
  # A validated notification of at most `max_bytes` for an initialized
  # connection whose negotiated groups include the method's group (shared by
  # Client and Server).
  def build_notification(ready?, negotiated, method, params, opts, max_bytes) do
    check_opts!(opts, @notification_opts, "notification")
    spec = Schema.method(method)

    cond do
      not ready? ->
        {:error, Error.new(:not_initialized, "notifications need an initialized connection")}

      spec == nil or spec.kind != :notification ->
        {:error, Error.new(:unknown_method, "unknown notification method", %{"method" => method})}

      not MapSet.member?(negotiated, spec.group) ->
        {:error, Error.new(:unsupported, "the method's capability group was not negotiated")}

      true ->
        with {:ok, message} <- SamgitaProtocol.Codec.validate(notification(method, params, opts)),
             :ok <- SamgitaProtocol.Codec.check_size(message, max_bytes),
             do: {:ok, message}
    end
  end

  @doc false
  # Per-call options are caller code: an unknown one raises, whatever the
  # connection state, rather than silently dropping context.
  def check_opts!([], _allowed, _what), do: :ok

  def check_opts!(opts, allowed, what) do
    Enum.each(opts, fn
      {key, _} when is_atom(key) ->
        unless key in allowed do
          raise ArgumentError,
                "unknown #{what} option #{inspect(key)}, expected one of: " <>
                  Enum.map_join(allowed, ", ", &inspect/1)
        end

      other ->
        raise ArgumentError,
              "expected #{what} options to be a keyword list, got: #{inspect(other)}"
    end)
  end

  @doc false
  # A response echoes the request's identity and context exactly.
  def response(request, result) do
    echo(request, "result", result)
  end

  @doc false
  # The response to a request that carries no optional envelope field, from
  # its id and correlation_id.
  def plain_response(id, correlation_id, result),
    do: plain_echo(id, correlation_id, "result", result)

  defp plain_echo(id, correlation_id, key, value) do
    %{
      "schema_version" => Schema.version(),
      "type" => "response",
      "id" => id,
      "correlation_id" => correlation_id,
      key => value
    }
  end

  @doc false
  def error_response(request, %Error{} = error) do
    echo(request, "error", Error.to_wire(safe(error)))
  end

  @doc false
  # The response envelope for `request` with `key` (result or error) set.
  # The common request carries no optional envelope field: its echo is
  # built directly (this runs for every response).
  def echo(
        %{
          "schema_version" => _,
          "type" => _,
          "id" => id,
          "correlation_id" => correlation_id,
          "method" => _,
          "params" => _
        } = request,
        key,
        value
      )
      when map_size(request) == 6,
      do: plain_echo(id, correlation_id, key, value)

  def echo(request, key, value) do
    @echo_keys
    |> :maps.with(request)
    |> Map.merge(plain_echo(request["id"], request["correlation_id"], key, value))
  end

  @doc false
  # True when the response carries exactly the identity the request had:
  # the same correlation, and each echoed key present in both with the same
  # value or absent from both.
  def echoes?(%{"correlation_id" => correlation_id} = request, response) do
    case response do
      %{"correlation_id" => ^correlation_id} -> same_echo?(request, response)
      %{} -> false
    end
  end

  # A request with none of the optional envelope fields is echoed by a
  # response with none of them (a response envelope has five fields then).
  defp same_echo?(
         %{"schema_version" => _, "type" => _, "id" => _, "method" => _, "params" => _} = request,
         response
       )
       when map_size(request) == 6,
       do: map_size(response) == 5

  defp same_echo?(request, response), do: same_echo?(request, response, @echo_keys)

  defp same_echo?(request, response, [key | rest]) do
    case {request, response} do
      {%{^key => value}, %{^key => value}} -> same_echo?(request, response, rest)
      {%{^key => _}, _} -> false
      {_, %{^key => _}} -> false
      _ -> same_echo?(request, response, rest)
    end
  end

  defp same_echo?(_request, _response, []), do: true

  @doc false
  # A collision-resistant fingerprint of a term, stable within one VM.
  # MD5 from erts (no :crypto dependency): this detects accidental conflicts
  # between authenticated peers, it is not a security boundary.
  def fingerprint(term), do: :erlang.md5(:erlang.term_to_binary(term, [:deterministic]))

  # Messages decoded from at most this many bytes are remembered by what is
  # already in memory: their decoded term or the binary it came from (a
  # reference, not a copy), cheaper to compare than to serialize and hash.
  # Larger messages, and maps handed in without their bytes, are remembered
  # by fingerprint so a bounded window never holds large terms.
  @inline_bytes 1024

  @type content_key :: {:term, term()} | {:wire, binary()} | {:md5, binary()}

  @doc false
  # What a stream's duplicate/conflict check remembers of a notification
  # that is buffered anyway (so keeping its term costs nothing more). `wire`
  # is the binary it was decoded from, or nil for a map handed in.
  def content_key(term, wire) when is_binary(wire) do
    # Decoded strings are sub-binaries of the wire form, so keeping the term
    # keeps the whole binary it was cut from alive: a frame sliced out of a
    # large transport buffer must be fingerprinted, not kept.
    if :binary.referenced_byte_size(wire) <= @inline_bytes,
      do: {:term, term},
      else: {:md5, fingerprint(term)}
  end

  def content_key(term, nil), do: {:md5, fingerprint(term)}

  @doc false
  # What the bounded identity windows (completed responses, seen requests)
  # remember of a message that is otherwise dropped: its wire binary, a few
  # words on the heap where the decoded term is dozens. A window of 128
  # decoded terms, each outliving a few garbage collections and dying in
  # the old heap, cost a round trip about a tenth of its time.
  def window_key(term, wire) when is_binary(wire) do
    if :binary.referenced_byte_size(wire) <= @inline_bytes,
      do: {:wire, wire},
      else: {:md5, fingerprint(term)}
  end

  def window_key(term, nil), do: {:md5, fingerprint(term)}

  @doc false
  # Exact content equality (`===`: 1 and 1.0 differ, as they do on the
  # wire) of a remembered message and `term`, decoded from `wire` (or nil).
  # The same bytes are the same content; other bytes (whitespace, key
  # order) are decoded again and compared, which only a repeated delivery
  # ever pays for.
  def same_content?(key, term, wire \\ nil)
  def same_content?({:term, kept}, term, _wire), do: kept === term
  def same_content?({:wire, kept}, _term, kept), do: true

  def same_content?({:wire, kept}, term, _wire) do
    # `kept` was decoded and validated once already; this cannot fail.
    case SamgitaProtocol.Codec.decode(kept) do
      {:ok, decoded} -> decoded === term
      {:error, _} -> false
    end
  end

  def same_content?({:md5, digest}, term, _wire), do: fingerprint(term) == digest

  # Errors that leave us must have a defined code; anything else becomes
  # a fixed internal error so no host data leaks onto the wire.
  defp safe(%Error{code: code, message: message, data: data} = error) when is_binary(message) do
    if code in Error.codes() and (is_nil(data) or is_map(data)),
      do: error,
      else: Error.new(:internal_error, "internal error")
  end

  defp safe(_), do: Error.new(:internal_error, "internal error")

  defp put_context(message, opts) do
    message
    |> put_opt("causation_id", opts[:causation_id])
    |> put_opt("project_ref", opts[:project_ref])
    |> put_opt("task_ref", opts[:task_ref])
  end

  defp put_opt(message, _key, nil), do: message
  defp put_opt(message, key, value), do: Map.put(message, key, value)
end
