defmodule SamgitaProtocol.Handler do
  @moduledoc """
  The behaviour a host implements to serve requests through
  `SamgitaProtocol.Server`.

  `methods/0` must return exactly the request methods of the capability
  groups the server advertises (`Server.new/3` raises `ArgumentError`
  otherwise). Handlers are only called for well-formed, negotiated requests;
  malformed input never reaches them. An exception, throw or exit in a
  callback becomes an `:internal_error` response with a fixed message and
  the previous host state: the library cannot undo an effect the callback
  already performed, and never retries it.

  The host owns persistence, authorization, command idempotency (by
  `command_id`), session lifecycle legality and tools. Repeating a completed
  incoming mutation may call the handler again.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.Error

  @typedoc """
  The identity of the request being handled: `"id"`, `"correlation_id"`,
  `"method"`, `"connection_id"` and, when present, `"command_id"`,
  `"causation_id"`, `"project_ref"`, `"task_ref"`.
  """
  @type context :: %{String.t() => String.t()}

  @callback methods() :: [String.t()]

  @callback handle_request(method :: String.t(), params :: map(), context(), host_state :: term()) ::
              {:ok, result :: map(), host_state :: term()}
              | {:error, Error.t(), host_state :: term()}

  @doc "A validated notification from the peer (sequenced ones in cursor order, once)."
  @callback handle_notification(method :: String.t(), notification :: map(), host_state :: term()) ::
              {:ok, host_state :: term()} | {:error, Error.t(), host_state :: term()}

  @doc """
  The outcome of a server-initiated request (`Server.request/4`): the
  validated result, the peer's typed error (origin `:remote`), a result that
  failed its checks (`:invalid_result`, `:approval_mismatch`,
  `:approval_expired`, origin `:peer`), or the end of the wait
  (`:timeout`, `:disconnected`, `:ambiguous_disconnect`). Its return value is
  the new host state; an exception keeps the previous one.
  """
  @callback handle_response(
              request :: map(),
              outcome :: {:ok, map()} | {:error, Error.t()},
              host_state :: term()
            ) :: {:ok, host_state :: term()}

  @optional_callbacks handle_notification: 3, handle_response: 3
end
