defmodule SamgitaProtocol.Message do
  @moduledoc false
  # Building envelopes and comparing them. Every builder returns a plain map
  # with string keys, ready for `SamgitaProtocol.Codec.encode/2`.

  alias SamgitaProtocol.{Error, Schema}

  @context_keys ["causation_id", "project_ref", "task_ref"]
  @echo_keys ["command_id" | @context_keys]

  @doc false
  def context_keys, do: @context_keys

  @doc false
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
  # A validated notification for an initialized connection whose negotiated
  # groups include the method's group (shared by Client and Server).
  def build_notification(ready?, negotiated, method, params, opts) do
    spec = Schema.method(method)

    cond do
      not ready? ->
        {:error, Error.new(:not_initialized, "notifications need an initialized connection")}

      spec == nil or spec.kind != :notification ->
        {:error, Error.new(:unknown_method, "unknown notification method", %{"method" => method})}

      not MapSet.member?(negotiated, spec.group) ->
        {:error, Error.new(:unsupported, "the method's capability group was not negotiated")}

      true ->
        SamgitaProtocol.Codec.validate(notification(method, params, opts))
    end
  end

  @doc false
  # A response echoes the request's identity and context exactly.
  def response(request, result) do
    request |> echo() |> Map.put("result", result)
  end

  @doc false
  def error_response(request, %Error{} = error) do
    request |> echo() |> Map.put("error", Error.to_wire(safe(error)))
  end

  @doc false
  def echo(request) do
    @echo_keys
    |> :maps.with(request)
    |> Map.merge(%{
      "schema_version" => Schema.version(),
      "type" => "response",
      "id" => request["id"],
      "correlation_id" => request["correlation_id"]
    })
  end

  @doc false
  # True when the response carries exactly the identity the request had:
  # the same correlation, and each echoed key present in both with the same
  # value or absent from both.
  def echoes?(request, response) do
    response["correlation_id"] === request["correlation_id"] and
      :maps.with(@echo_keys, request) === :maps.with(@echo_keys, response)
  end

  @doc false
  # A collision-resistant fingerprint of a term, stable within one VM.
  # MD5 from erts (no :crypto dependency): this detects accidental conflicts
  # between authenticated peers, it is not a security boundary.
  def fingerprint(term), do: :erlang.md5(:erlang.term_to_binary(term, [:deterministic]))

  # Messages that arrived as at most this many bytes are remembered as the
  # decoded term itself: it is already in memory (a reference, not a copy)
  # and comparing it costs less than serializing and hashing it. Larger
  # messages, and maps handed in without their bytes, are remembered by
  # fingerprint so a bounded window never holds large terms.
  @inline_bytes 1024

  @type content_key :: {:term, term()} | {:md5, binary()}

  @doc false
  # What duplicate/conflict windows remember of a message. `bytes` is the
  # size of the wire form it was decoded from, or nil.
  def content_key(term, bytes) when is_integer(bytes) and bytes <= @inline_bytes,
    do: {:term, term}

  def content_key(term, _bytes), do: {:md5, fingerprint(term)}

  @doc false
  # Exact content equality (`===`: 1 and 1.0 differ, as they do on the wire).
  def same_content?({:term, kept}, term), do: kept === term
  def same_content?({:md5, digest}, term), do: fingerprint(term) == digest

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
