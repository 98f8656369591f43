defmodule SamgitaProtocol.Server do
  @moduledoc """
  Pure connection state of the side that hosts a `SamgitaProtocol.Handler`.
  Create one per authenticated connection with `new/3`; authenticate before
  calling `receive/3`.

  `receive/3` validates the input, answers `connection/initialize` itself,
  refuses anything outside the negotiated groups (the handler is not
  called), and calls the handler for everything else. It returns the
  messages to send and the new server, holding the new host state.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.{Codec, Contract, Error, Message, Options, Outbox, RecentIds, Schema}

  @type t :: %__MODULE__{}

  defstruct [
    :handler,
    :host_state,
    :connection_id,
    :host_id,
    state: :new,
    capabilities: [],
    versions: ["1.0"],
    durable: false,
    negotiated: MapSet.new(),
    outbox: nil,
    seen: nil,
    positions: %{},
    limits: %{}
  ]

  @doc """
  Creates a server for `handler` with the initial `host_state`.

  ## Options

    * `:capabilities` - advertised groups; `handler.methods/0` must equal
      exactly their request methods. Defaults to `[]`.
    * `:versions` - supported versions. Defaults to `["1.0"]`.
    * `:host_id` - this host's stable identity, sent in the initialize result
      so clients keep checkpoints per host. Defaults to a random identity;
      a host that serves replay across connections should configure it.
    * `:connection_id` - defaults to a random identity.
    * `:durable` - whether this host's inbox commits events; only then may a
      handler return `acceptance: "durable"`. Defaults to `false`.
    * `:positions` - processed positions of sequenced notifications from the
      peer, as returned by `positions/1`, to restore after a restart (the host
      persists them after each successful callback). Defaults to `%{}`.
    * `:id_generator` - `fn generation, counter -> id end` for
      server-initiated request IDs. Defaults to `"s<generation>-<counter>"`.
    * `:max_outstanding_requests` (64), `:max_uncertain_commands` (64) and
      `:request_timeout_ms` (30 s) bound server-initiated requests;
      `:max_completed` (128) bounds the window of remembered request and
      response identities; `:max_streams` (64) the sequenced streams received
      from the peer; `:max_message_bytes` (1 MiB) every message in and out.

  Unknown options and bad values raise `ArgumentError`. The client-only
  bounds (`:max_incoming_requests`, `:max_buffered_notifications`,
  `:max_stream_hashes`) are not accepted: the server answers each request
  before `receive/3` returns and hands each notification to the handler at
  once, so it has nothing for them to bound.
  """
  @spec new(module(), term(), keyword()) :: {:ok, t()}
  def new(handler, host_state, opts \\ []) when is_atom(handler) do
    o =
      Options.validate!(
        opts,
        [
          capabilities: {:groups, []},
          versions: {:versions, ["1.0"]},
          host_id: {:id, nil},
          connection_id: {:id, nil},
          durable: {:boolean, false},
          id_generator: {:id_generator, nil},
          positions: {:any, %{}}
        ] ++
          Options.limit_spec([
            :max_outstanding_requests,
            :max_uncertain_commands,
            :max_completed,
            :max_streams,
            :max_message_bytes,
            :request_timeout_ms
          ])
      )

    Code.ensure_loaded(handler)

    unless function_exported?(handler, :methods, 0) and
             function_exported?(handler, :handle_request, 4) do
      raise ArgumentError,
            "expected handler to implement SamgitaProtocol.Handler, got: #{inspect(handler)}"
    end

    expected = o.capabilities |> Enum.flat_map(&Schema.request_methods/1) |> Enum.sort()
    actual = handler.methods() |> Enum.sort()

    unless actual == expected do
      raise ArgumentError,
            "expected #{inspect(handler)}.methods/0 to equal the request methods of #{inspect(o.capabilities)}: " <>
              "#{inspect(expected)}, got: #{inspect(actual)}"
    end

    {:ok,
     %__MODULE__{
       handler: handler,
       host_state: host_state,
       capabilities: o.capabilities,
       versions: o.versions,
       durable: o.durable,
       host_id: o.host_id || random_id("host-"),
       connection_id: o.connection_id || random_id("conn-"),
       outbox: Outbox.new("s", o),
       seen: RecentIds.new(o.max_completed),
       positions: Options.stream_positions!(:positions, o.positions, o.max_streams),
       limits: o
     }}
  end

  defp random_id(prefix),
    do:
      prefix <>
        Base.url_encode64(:erlang.term_to_binary(make_ref()) |> :erlang.md5(), padding: false)

  @doc "The current host state."
  @spec host_state(t()) :: term()
  def host_state(%__MODULE__{host_state: s}), do: s

  @doc "`:new`, `:ready` or `:disconnected`."
  @spec state(t()) :: atom()
  def state(%__MODULE__{state: s}), do: s

  @doc "The negotiated capability groups."
  @spec capabilities(t()) :: [String.t()]
  def capabilities(%__MODULE__{negotiated: n}), do: Enum.sort(n)

  @doc """
  Receives one message (JSON binary or decoded map).

  Returns `{:ok, outgoing, server}` for valid input (outgoing may hold an
  error response: the handler's typed error, `:not_initialized`,
  `:unsupported`, `:internal_error`, ...), or `{:error, error, outgoing,
  server}` when the input itself was invalid; `outgoing` then holds an error
  response if the request's identity could be recovered, so the peer's
  request does not hang. Malformed input never reaches the handler.

  ## Options

    * `:now` - wall clock `DateTime` for approval deadlines (the handler's own
      approval decisions and the peer's). Defaults to `DateTime.utc_now()`,
      read only when a deadline is checked.
  """
  @spec receive(t(), binary() | map(), keyword()) ::
          {:ok, [map()], t()} | {:error, Error.t(), [map()], t()}
  def receive(server, message, opts \\ [])

  def receive(%__MODULE__{state: :disconnected} = server, _message, _opts),
    do: {:error, Error.new(:disconnected, "the connection is closed"), [], server}

  def receive(%__MODULE__{} = server, message, opts) do
    now = Contract.wall_clock!(opts)

    case decode(server, message) do
      {:ok, decoded, kind, spec} ->
        wire = if is_binary(message), do: message

        case kind do
          :request ->
            case handle_request(server, decoded, spec, wire, now) do
              {:conflict, response} -> {:ok, [response], server}
              {:reply, response, server} -> {:ok, [response], server}
            end

          :response ->
            receive_response(server, decoded, wire, now)

          :notification ->
            receive_notification(server, decoded, spec)
        end

      {:error, error} ->
        {:error, error, recover(message, error), server}
    end
  end

  defp decode(server, binary) when is_binary(binary),
    do: Codec.decode_message(binary, server.limits.max_message_bytes, Codec.default_max_depth())

  defp decode(server, map),
    do: Codec.validate_received(map, max_message_bytes: server.limits.max_message_bytes)

  # If the invalid input still names a request identity, answer it with the
  # error so the peer's request does not wait for a timeout.
  # Only schema-level failures are recoverable: input that is too large, not
  # UTF-8, not JSON or too deep is never decoded again.
  @unrecoverable [
    :message_too_large,
    :invalid_utf8,
    :invalid_json,
    :depth_exceeded,
    :duplicate_key
  ]

  defp recover(_message, %Error{code: code}) when code in @unrecoverable, do: []
  # A map that no JSON decoder could have produced is the caller's bug, not
  # the peer's request: nothing is answered.
  defp recover(_message, %Error{origin: :local}), do: []

  defp recover(message, error) do
    term =
      case message do
        bin when is_binary(bin) ->
          case JSON.decode(bin) do
            {:ok, map} -> map
            _ -> nil
          end

        map ->
          map
      end

    with %{"type" => "request", "id" => id, "correlation_id" => corr}
         when is_binary(id) and is_binary(corr) <-
           term,
         true <-
           byte_size(id) <= Schema.max_id_bytes() and byte_size(corr) <= Schema.max_id_bytes() do
      [Message.error_response(%{"id" => id, "correlation_id" => corr}, error)]
    else
      _ -> []
    end
  rescue
    _ -> []
  end

  # Identity reuse: the same id with different content is a conflict. The
  # same request again is handled again (the host deduplicates by command_id).
  # :new (not remembered), :same (the same content again) or :other.
  defp seen(server, id, request, wire) do
    case RecentIds.fetch(server.seen, id) do
      {:ok, key} -> if Message.same_content?(key, request, wire), do: :same, else: :other
      :error -> :new
    end
  end

  defp handle_request(server, %{"id" => id} = request, spec, wire, now) do
    %{method: method} = spec
    # connection/initialize is the one request of no capability group.
    initialize? = spec.group == nil

    seen = seen(server, id, request, wire)

    refusal =
      cond do
        seen == :other ->
          Error.new(:conflict, "request id reused with different content", %{"id" => id})

        initialize? and server.state != :new ->
          Error.new(:already_initialized, "the connection is already initialized")

        initialize? ->
          nil

        server.state != :ready ->
          Error.new(:not_initialized, "send connection/initialize first")

        not MapSet.member?(server.negotiated, spec.group) ->
          Error.new(:unsupported, "the method's capability group was not negotiated", %{
            "method" => method
          })

        true ->
          nil
      end

    cond do
      refusal && refusal.code == :conflict ->
        {:conflict, Message.error_response(request, refusal)}

      true ->
        # The same request again is remembered once, at its first arrival.
        server =
          if seen == :new,
            do: %{
              server
              | seen: RecentIds.add(server.seen, id, Message.window_key(request, wire))
            },
            else: server

        cond do
          refusal -> {:reply, Message.error_response(request, refusal), server}
          initialize? -> initialize(server, request)
          true -> call_handler(server, spec, request, now)
        end
    end
  end

  defp initialize(server, %{"params" => params} = request) do
    offered = params["capabilities"]
    required = Map.get(params, "required_capabilities", [])
    supported = Enum.filter(server.capabilities, &(&1 in offered))
    version = Enum.find(server.versions, &(&1 in params["versions"]))
    missing = Enum.reject(required, &(&1 in server.capabilities))

    cond do
      version == nil ->
        error =
          Error.new(:no_common_version, "no common schema version", %{
            "supported" => server.versions
          })

        {:reply, Message.error_response(request, error), server}

      missing != [] ->
        error =
          Error.new(:missing_required_capability, "a required capability is not supported", %{
            "missing" => Enum.sort(missing)
          })

        {:reply, Message.error_response(request, error), server}

      true ->
        result = %{
          "version" => version,
          "capabilities" => supported,
          "connection_id" => server.connection_id,
          "host_id" => server.host_id
        }

        {:reply, Message.response(request, result),
         %{server | state: :ready, negotiated: MapSet.new(supported)}}
    end
  end

  # What a handler sees of the request's identity (see Handler.context/0).
  @context_keys ["id", "correlation_id", "method", "command_id" | Message.context_keys()]

  defp call_handler(server, spec, request, now) do
    %{"id" => id, "correlation_id" => correlation_id, "params" => params} = request
    # A validated request of six fields carries only the required ones: its
    # context and response envelope are built directly from what was read
    # (this runs for every request).
    plain? = map_size(request) == 6

    context =
      if plain?,
        do: %{
          "id" => id,
          "correlation_id" => correlation_id,
          "method" => spec.method,
          "connection_id" => server.connection_id
        },
        else:
          @context_keys |> :maps.with(request) |> Map.put("connection_id", server.connection_id)

    outcome =
      try do
        server.handler.handle_request(spec.method, params, context, server.host_state)
      rescue
        _ -> :crashed
      catch
        _, _ -> :crashed
      end

    case outcome do
      {:ok, result, host_state} when is_map(result) ->
        server = %{server | host_state: host_state}

        response =
          if plain?,
            do: Message.plain_response(id, correlation_id, result),
            else: Message.response(request, result)

        case check_own_result(server, spec, params, response, result, now) do
          :ok -> {:reply, response, server}
          {:error, error} -> {:reply, Message.error_response(request, error), server}
        end

      {:error, %Error{} = error, host_state} ->
        response = Message.error_response(request, error)

        # A handler's error must still be a sendable message: plain JSON
        # data, within the size bound (measured the way results are).
        response =
          with {:ok, _} <- Codec.validate(response),
               :ok <- Codec.check_size(response, server.limits.max_message_bytes) do
            response
          else
            {:error, _} -> internal(request)
          end

        {:reply, response, %{server | host_state: host_state}}

      _ ->
        # Raised, threw, exited or returned garbage: the previous host state
        # is kept, and no detail of the failure leaves the host.
        {:reply, internal(request), server}
    end
  end

  # The handler's result must be a valid, bound result for this request that
  # fits in one message; otherwise the peer gets a fixed internal error (the
  # handler's bug is not the peer's business). One exception: approving
  # after the deadline (checked against the real clock) is answered with
  # `approval_expired`, because that is a fact about the request, not a bug.
  defp check_own_result(server, spec, params, response, result, now) do
    durable_violation =
      spec.method == "project/event.receive" and not server.durable and
        result["acceptance"] == "durable"

    with false <- durable_violation,
         :ok <-
           Contract.check_result(spec, params, result, now, %{trusted: false, max_depth: 32}),
         :ok <- Codec.check_size(response, server.limits.max_message_bytes) do
      :ok
    else
      {:error, %Error{code: :approval_expired} = error} -> {:error, error}
      _ -> {:error, internal_error()}
    end
  end

  defp internal(request), do: Message.error_response(request, internal_error())

  defp internal_error, do: Error.new(:internal_error, "the host failed to handle the request")

  defp receive_response(server, response, wire, now) do
    case Outbox.receive_response(server.outbox, response, wire, now) do
      {:ok, :duplicate, outbox} ->
        {:ok, [], %{server | outbox: outbox}}

      {:ok, {kind, entry, value}, outbox} ->
        {:ok, [], respond(%{server | outbox: outbox}, entry.request, {ok_tag(kind), value})}

      {:error, error, outbox} ->
        {:error, error, [], %{server | outbox: outbox}}
    end
  end

  defp ok_tag(:result), do: :ok
  defp ok_tag(:error), do: :error

  defp respond(server, request, outcome) do
    case server.handler.handle_response(request, outcome, server.host_state) do
      {:ok, host_state} -> %{server | host_state: host_state}
      _ -> server
    end
  rescue
    _ -> server
  catch
    _, _ -> server
  end

  # Sequenced notifications: cursor checks first, the callback second, and the
  # position is marked processed only after the callback succeeds.
  defp receive_notification(server, notification, spec) do
    cond do
      server.state != :ready ->
        {:error, Error.peer(:not_initialized, "notification before initialization"), [], server}

      not MapSet.member?(server.negotiated, spec.group) or
          not function_exported?(server.handler, :handle_notification, 3) ->
        {:error, Error.peer(:unsupported, "this host does not accept this notification"), [],
         server}

      true ->
        with {:ok, position} <- position(server, notification) do
          deliver(server, notification, position)
        else
          :duplicate -> {:ok, [], server}
          {:error, error} -> {:error, error, [], server}
        end
    end
  end

  defp position(server, %{"stream_id" => id, "cursor" => cursor}) do
    processed = Map.get(server.positions, id)

    cond do
      processed == nil and map_size(server.positions) >= server.limits.max_streams ->
        {:error, Outbox.limit_error(:max_streams, server.limits.max_streams)}

      cursor <= (processed || 0) ->
        :duplicate

      cursor != (processed || 0) + 1 ->
        {:error,
         Error.peer(:cursor_gap, "stream events were skipped or reordered", %{
           "stream_id" => id,
           "expected" => (processed || 0) + 1,
           "cursor" => cursor
         })}

      true ->
        {:ok, {id, cursor}}
    end
  end

  defp position(_server, _notification), do: {:ok, nil}

  defp deliver(server, notification, position) do
    outcome =
      try do
        server.handler.handle_notification(
          notification["method"],
          notification,
          server.host_state
        )
      rescue
        _ -> :crashed
      catch
        _, _ -> :crashed
      end

    case {outcome, position} do
      {{:ok, host_state}, nil} ->
        {:ok, [], %{server | host_state: host_state}}

      {{:ok, host_state}, {id, cursor}} ->
        {:ok, [],
         %{server | host_state: host_state, positions: Map.put(server.positions, id, cursor)}}

      {{:error, %Error{} = error, host_state}, _} ->
        {:error, error, [], %{server | host_state: host_state}}

      _ ->
        {:error, Error.new(:internal_error, "the host failed to handle the notification"), [],
         server}
    end
  end

  @doc """
  Releases a finished stream received from the peer: its processed position
  is dropped, so it no longer counts against `:max_streams`. A later
  notification of the same `stream_id` must start again at cursor 1. The
  server holds no unprocessed events, so this always succeeds.
  """
  @spec forget_stream(t(), String.t()) :: {:ok, t()}
  def forget_stream(%__MODULE__{} = server, stream_id) when is_binary(stream_id),
    do: {:ok, %{server | positions: Map.delete(server.positions, stream_id)}}

  @doc "Processed positions of sequenced notifications received from the peer."
  @spec positions(t()) :: %{String.t() => pos_integer()}
  def positions(%__MODULE__{positions: p}), do: p

  @doc """
  Builds a server-initiated request (for example `approval/request`). The
  handler must implement `handle_response/3`, which receives the outcome.
  Takes the same options as `SamgitaProtocol.Client.request/4`.
  """
  @spec request(t(), String.t(), map(), keyword()) :: {:ok, map(), t()} | {:error, Error.t(), t()}
  def request(%__MODULE__{} = server, method, params, opts \\ []) do
    Outbox.check_request_opts!(opts)
    spec = Schema.method(method)

    cond do
      not function_exported?(server.handler, :handle_response, 3) ->
        {:error,
         Error.new(:no_response_callback, "the handler does not implement handle_response/3"),
         server}

      server.state != :ready ->
        {:error, Error.new(:not_initialized, "the connection is not initialized"), server}

      spec == nil or spec.kind != :request or spec.group == nil ->
        {:error, Error.new(:unknown_method, "unknown request method", %{"method" => method}),
         server}

      not MapSet.member?(server.negotiated, spec.group) ->
        {:error, Error.new(:unsupported, "the method's capability group was not negotiated"),
         server}

      true ->
        case Outbox.hand_out(server.outbox, spec, params, opts) do
          {:ok, message, outbox} -> {:ok, message, %{server | outbox: outbox}}
          {:error, error} -> {:error, error, server}
        end
    end
  end

  @doc "Builds a notification to send (see `SamgitaProtocol.Client.notify/4` for options)."
  @spec notify(t(), String.t(), map(), keyword()) :: {:ok, map(), t()} | {:error, Error.t(), t()}
  def notify(%__MODULE__{} = server, method, params, opts \\ []) do
    case Message.build_notification(
           server.state == :ready,
           server.negotiated,
           method,
           params,
           opts,
           server.limits.max_message_bytes
         ) do
      {:ok, message} -> {:ok, message, server}
      {:error, error} -> {:error, error, server}
    end
  end

  @doc """
  Server-initiated requests whose deadline passed end now; the handler's
  `handle_response/3` gets `{:error, %Error{code: :timeout | :ambiguous_disconnect}}`.
  """
  @spec expire(t(), integer()) :: {:ok, t()}
  def expire(%__MODULE__{} = server, now_ms) when is_integer(now_ms) do
    pending = server.outbox.pending
    {effects, outbox} = Outbox.expire(server.outbox, now_ms)
    {:ok, abandon(%{server | outbox: outbox}, pending, effects)}
  end

  @doc "The transport closed: pending server-initiated requests end with `:disconnected` / `:ambiguous_disconnect`."
  @spec disconnect(t()) :: {:ok, t()}
  def disconnect(%__MODULE__{} = server) do
    pending = server.outbox.pending
    {effects, outbox} = Outbox.disconnect(server.outbox)
    {:ok, abandon(%{server | outbox: outbox, state: :disconnected}, pending, effects)}
  end

  defp abandon(server, pending, effects) do
    Enum.reduce(effects, server, fn {:error, id, error}, s ->
      respond(s, pending[id].request, {:error, error})
    end)
  end
end
