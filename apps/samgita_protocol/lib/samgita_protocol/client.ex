defmodule SamgitaProtocol.Client do
  @moduledoc """
  Pure connection state of the side that opens a connection and sends
  `connection/initialize`. Processless: every function takes the client and
  returns the new client, on errors too. Callers send returned messages
  through their transport and act on returned effects.

  ## Effects

  `receive/3` returns a list of effects:

    * `{:response, id, result}` - a validated result for the pending request `id`
    * `{:error, id, %SamgitaProtocol.Error{}}` - the request `id` ended with an
      error (a typed error response, an invalid result, a disconnect or a timeout)
    * `{:request, request}` - a request from the peer; answer it with `reply/4`
    * `{:notification, notification}` - an unsequenced (ephemeral) notification
    * `{:send, message}` - an error response the client produced for an incoming
      request it refused (not initialized, unsupported, over a bound); send it

  Sequenced notifications (with `stream_id` and `cursor`) are buffered
  instead: take them with `drain/2` and acknowledge with `ack_cursor/3`.

  ## States

  `:new` -> (`connection/initialize` sent) `:initializing` -> (successful
  result) `:ready`; any -> `disconnect/1` -> `:disconnected` ->
  `reconnect/1` -> `:new`. The legal moves are in `@transitions`.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.{
    Codec,
    Contract,
    Error,
    Message,
    Options,
    Outbox,
    Schema,
    Streams,
    Window
  }

  @transitions %{
    {:new, :send_initialize} => :initializing,
    {:initializing, :initialized} => :ready,
    {:initializing, :initialize_failed} => :new,
    {:new, :disconnect} => :disconnected,
    {:initializing, :disconnect} => :disconnected,
    {:ready, :disconnect} => :disconnected,
    {:disconnected, :disconnect} => :disconnected,
    {:disconnected, :reconnect} => :new
  }

  @type state :: :new | :initializing | :ready | :disconnected
  @type effect ::
          {:response, String.t(), map()}
          | {:error, String.t(), Error.t()}
          | {:request, map()}
          | {:notification, map()}
          | {:send, map()}

  @type t :: %__MODULE__{}

  defstruct state: :new,
            capabilities: [],
            required_capabilities: [],
            versions: ["1.0"],
            host_id: nil,
            negotiated: MapSet.new(),
            version: nil,
            connection_id: nil,
            offer: nil,
            outbox: nil,
            incoming: %{},
            streams: nil,
            resumes: nil,
            limits: %{}

  @doc """
  Creates a client.

  ## Options

    * `:capabilities` - groups to offer (defined groups only). Defaults to all.
    * `:required_capabilities` - groups the host must support. Defaults to `[]`.
    * `:versions` - schema versions to offer. Defaults to `["1.0"]`.
    * `:id_generator` - `fn generation, counter -> id end` for request IDs.
      Defaults to `"c<generation>-<counter>"`.
    * `:host_id` - the authenticated host these checkpoints belong to; the
      host's `host_id` in the initialize result must match.
    * `:checkpoints` - a map from `checkpoints/1` to restore; requires a
      matching `:host_id`.
    * `:max_outstanding_requests` (64), `:max_uncertain_commands` (64),
      `:max_incoming_requests` (64), `:max_buffered_notifications` (128),
      `:max_completed` (128), `:max_streams` (64), `:max_stream_hashes` (128),
      `:max_message_bytes` (1 MiB), `:request_timeout_ms` (30 s).

  Unknown options and bad values raise `ArgumentError`.

  ## Examples

      iex> {:ok, client} = SamgitaProtocol.Client.new(capabilities: ["project_events.v1"])
      iex> SamgitaProtocol.Client.state(client)
      :new

  """
  @spec new(keyword()) :: {:ok, t()}
  def new(opts \\ []) do
    o =
      Options.validate!(
        opts,
        [
          capabilities: {:groups, Schema.groups()},
          required_capabilities: {:groups, []},
          versions: {:versions, ["1.0"]},
          id_generator: {:id_generator, nil},
          host_id: {:id, nil},
          checkpoints: {:any, nil}
        ] ++ Options.limit_spec()
      )

    unless Enum.all?(o.required_capabilities, &(&1 in o.capabilities)) do
      raise ArgumentError,
            "expected :required_capabilities to be a subset of :capabilities, got: #{inspect(o.required_capabilities)}"
    end

    checkpoints = restore_checkpoints!(o.checkpoints, o.host_id, o.max_streams)

    {:ok,
     %__MODULE__{
       capabilities: o.capabilities,
       required_capabilities: o.required_capabilities,
       versions: o.versions,
       host_id: o.host_id,
       outbox: Outbox.new("c", o),
       streams: Streams.new(o, checkpoints),
       resumes: Window.new(o.max_completed),
       limits: o
     }}
  end

  defp restore_checkpoints!(nil, _host, _max_streams), do: %{}

  defp restore_checkpoints!(%{"host_id" => host, "streams" => streams}, host_id, max_streams)
       when is_map(streams) do
    cond do
      host_id == nil ->
        raise ArgumentError, "expected :host_id to be given with :checkpoints, got: nil"

      host != host_id ->
        raise ArgumentError,
              "expected :checkpoints to belong to :host_id #{inspect(host_id)}, got checkpoints of host: #{inspect(host)}"

      true ->
        Options.stream_positions!(:checkpoints, streams, max_streams)
    end
  end

  defp restore_checkpoints!(other, _, _),
    do:
      raise(ArgumentError,
        message:
          "expected :checkpoints to be a map from checkpoints/1 (%{\"host_id\" => ..., \"streams\" => ...}), got: #{inspect(other)}"
      )

  @doc "The connection state: `:new`, `:initializing`, `:ready` or `:disconnected`."
  @spec state(t()) :: state()
  def state(%__MODULE__{state: state}), do: state

  @doc "The negotiated capability groups (empty before initialization)."
  @spec capabilities(t()) :: [String.t()]
  def capabilities(%__MODULE__{negotiated: n}), do: Enum.sort(n)

  @doc "The `connection_id` the host assigned, or `nil`."
  @spec connection_id(t()) :: String.t() | nil
  def connection_id(%__MODULE__{connection_id: id}), do: id

  @doc """
  Builds a request and records it as pending. The returned message is
  "handed out": from now on a disconnect or timeout makes a mutation's
  outcome ambiguous.

  For `connection/initialize`, missing `versions`, `capabilities` and
  `required_capabilities` params are filled from the client's options.

  ## Options

  `:id`, `:correlation_id` (defaults to the id), `:causation_id`,
  `:command_id` (required for mutations), `:project_ref`, `:task_ref`,
  `:now` (monotonic milliseconds; defaults to `System.monotonic_time(:millisecond)`,
  and must use the same clock as `expire/2`).

  ## Error reasons

  `:not_initialized`, `:disconnected`, `:already_initialized`,
  `:unknown_method`, `:unsupported`, `:conflict`, `:limit_exceeded`, and any
  codec validation code for invalid params, `:message_too_large` when the
  request would not fit in `:max_message_bytes`. On error nothing is
  recorded. An unknown option, or a `:now` that is not an integer, raises
  `ArgumentError` in any connection state.
  """
  @spec request(t(), String.t(), map(), keyword()) ::
          {:ok, map(), t()} | {:error, Error.t(), t()}
  def request(%__MODULE__{} = client, method, params, opts \\ []) do
    Outbox.check_request_opts!(opts)

    with {:ok, spec} <- sendable(client, method),
         params = fill_initialize(client, method, params),
         :ok <- check_offer(method, params),
         {:ok, message, outbox} <- Outbox.hand_out(client.outbox, spec, params, opts) do
      client = %{client | outbox: outbox}

      client =
        if method == "connection/initialize",
          do: %{transition(client, :send_initialize) | offer: params},
          else: client

      {:ok, message, client}
    else
      {:error, %Error{} = error} -> {:error, error, client}
    end
  end

  defp sendable(client, method) do
    spec = Schema.method(method)

    cond do
      client.state == :disconnected ->
        {:error, Error.new(:disconnected, "the connection is closed; reconnect first")}

      spec == nil or spec.kind != :request ->
        {:error, Error.new(:unknown_method, "unknown request method", %{"method" => method})}

      method == "connection/initialize" and client.state != :new ->
        {:error,
         Error.new(:already_initialized, "initialization was already sent on this connection")}

      method == "connection/initialize" ->
        {:ok, spec}

      client.state != :ready ->
        {:error,
         Error.new(
           :not_initialized,
           "only connection/initialize may be sent before initialization completes"
         )}

      not MapSet.member?(client.negotiated, spec.group) ->
        {:error,
         Error.new(:unsupported, "the method's capability group was not negotiated", %{
           "method" => method,
           "group" => spec.group
         })}

      true ->
        {:ok, spec}
    end
  end

  defp fill_initialize(client, "connection/initialize", params) when is_map(params) do
    params
    |> Map.put_new("versions", client.versions)
    |> Map.put_new("capabilities", client.capabilities)
    |> then(fn p ->
      if client.required_capabilities == [],
        do: p,
        else: Map.put_new(p, "required_capabilities", client.required_capabilities)
    end)
  end

  defp fill_initialize(_client, _method, params), do: params

  # A local side may advertise only defined groups, and require only what it offers.
  defp check_offer("connection/initialize", %{"capabilities" => caps} = params)
       when is_list(caps) do
    required = Map.get(params, "required_capabilities", [])

    cond do
      not Enum.all?(caps, &(&1 in Schema.groups())) ->
        {:error, Error.new(:unsupported, "only defined capability groups may be advertised")}

      not (is_list(required) and Enum.all?(required, &(&1 in caps))) ->
        {:error,
         Error.new(
           :invalid_params,
           "required_capabilities must be among the offered capabilities"
         )}

      true ->
        :ok
    end
  end

  defp check_offer(_method, _params), do: :ok

  @doc """
  Builds a notification to send (ephemeral unless `:stream_id` and `:cursor`
  are given). `:message_too_large` when it would not fit in
  `:max_message_bytes`; an unknown option raises `ArgumentError`.

  ## Options

  `:stream_id`, `:cursor`, `:correlation_id`, `:causation_id`,
  `:project_ref`, `:task_ref`.
  """
  @spec notify(t(), String.t(), map(), keyword()) :: {:ok, map(), t()} | {:error, Error.t(), t()}
  def notify(%__MODULE__{} = client, method, params, opts \\ []) do
    case Message.build_notification(
           client.state == :ready,
           client.negotiated,
           method,
           params,
           opts,
           client.limits.max_message_bytes
         ) do
      {:ok, message} -> {:ok, message, client}
      {:error, error} -> {:error, error, client}
    end
  end

  @doc """
  Receives one message from the peer: a JSON binary (decoded with the
  client's `:max_message_bytes`) or an already decoded map (validated).

  ## Options

    * `:now` - wall clock `DateTime` for approval deadlines. Defaults to
      `DateTime.utc_now()`, read only when a deadline is checked. Any other
      value raises `ArgumentError` (this is not `request/4`'s monotonic
      clock).

  ## Error reasons

  Any codec code for invalid input, `:unknown_response`,
  `:conflicting_response`, `:mismatched_response`, `:not_initialized`,
  `:unsupported`, `:disconnected`, and the stream codes `:cursor_gap`,
  `:replay_conflict` and `:limit_exceeded`. On error the client is unchanged.
  """
  @spec receive(t(), binary() | map(), keyword()) ::
          {:ok, [effect()], t()} | {:error, Error.t(), t()}
  def receive(client, message, opts \\ [])

  def receive(%__MODULE__{} = client, message, opts) do
    now = Contract.wall_clock!(opts)

    with :ok <- connected(client),
         {:ok, decoded, kind, spec} <- decode(client, message) do
      wire = if is_binary(message), do: message

      case kind do
        :response -> receive_response(client, decoded, wire, now)
        :request -> receive_request(client, decoded, spec)
        :notification -> receive_notification(client, decoded, spec, wire)
      end
    else
      {:error, error} -> {:error, error, client}
    end
  end

  defp connected(%{state: :disconnected}),
    do: {:error, Error.new(:disconnected, "the connection is closed; reconnect first")}

  defp connected(_), do: :ok

  defp decode(client, binary) when is_binary(binary),
    do: Codec.decode_message(binary, client.limits.max_message_bytes, Codec.default_max_depth())

  defp decode(client, map),
    do: Codec.validate_received(map, max_message_bytes: client.limits.max_message_bytes)

  defp receive_response(client, response, wire, now) do
    case Outbox.receive_response(client.outbox, response, wire, now) do
      {:ok, :duplicate, outbox} ->
        {:ok, [], %{client | outbox: outbox}}

      {:ok, {kind, entry, value}, outbox} ->
        client = %{client | outbox: outbox}

        case entry.spec.method do
          "connection/initialize" ->
            initialized(client, entry, kind, value)

          "stream/resume" when kind == :result ->
            {:ok, [{:response, entry.request["id"], value}], remember_resume(client, value)}

          _ ->
            {:ok, [effect(kind, entry, value)], client}
        end

      {:error, error, outbox} ->
        {:error, error, %{client | outbox: outbox}}
    end
  end

  defp effect(:result, entry, result), do: {:response, entry.request["id"], result}
  defp effect(:error, entry, error), do: {:error, entry.request["id"], error}

  defp initialized(client, entry, :error, error),
    do: {:ok, [effect(:error, entry, error)], transition(client, :initialize_failed)}

  defp initialized(client, entry, :result, result) do
    offer = client.offer
    offered = MapSet.new(offer["capabilities"])
    selected = MapSet.new(result["capabilities"])
    required = MapSet.new(Map.get(offer, "required_capabilities", []))
    id = entry.request["id"]

    failure =
      cond do
        result["version"] not in offer["versions"] ->
          Error.peer(:invalid_result, "the host selected a version that was not offered")

        not MapSet.subset?(selected, offered) ->
          Error.peer(:invalid_result, "the host selected capabilities that were not offered")

        not MapSet.subset?(required, selected) ->
          Error.peer(
            :missing_required_capability,
            "the host does not support a required capability",
            %{
              "missing" => required |> MapSet.difference(selected) |> Enum.sort()
            }
          )

        client.host_id != nil and client.host_id != result["host_id"] ->
          Error.peer(:host_mismatch, "the host is not the one these checkpoints belong to")

        true ->
          nil
      end

    if failure do
      {:ok, [{:error, id, failure}], transition(client, :initialize_failed)}
    else
      client = %{
        transition(client, :initialized)
        | negotiated: selected,
          version: result["version"],
          connection_id: result["connection_id"],
          host_id: result["host_id"]
      }

      {:ok, [{:response, id, result}], client}
    end
  end

  # Incoming requests are refused with an error response the caller sends
  # back ({:send, message}), so the peer's request never hangs.
  defp receive_request(client, %{"id" => id} = request, spec) do
    %{method: method} = spec

    refusal =
      cond do
        client.state != :ready ->
          Error.new(:not_initialized, "the connection is not initialized")

        not MapSet.member?(client.negotiated, spec.group) ->
          Error.new(:unsupported, "the method's capability group was not negotiated", %{
            "method" => method
          })

        is_map_key(client.incoming, id) ->
          Error.new(:conflict, "a request with this id is already pending", %{"id" => id})

        map_size(client.incoming) >= client.limits.max_incoming_requests ->
          Outbox.limit_error(:max_incoming_requests, client.limits.max_incoming_requests)

        true ->
          nil
      end

    if refusal do
      {:ok, [{:send, Message.error_response(request, refusal)}], client}
    else
      {:ok, [{:request, request}], %{client | incoming: Map.put(client.incoming, id, request)}}
    end
  end

  defp receive_notification(client, notification, spec, wire) do
    cond do
      client.state != :ready ->
        {:error, Error.peer(:not_initialized, "notification before initialization"), client}

      not MapSet.member?(client.negotiated, spec.group) ->
        {:error,
         Error.peer(:unsupported, "the notification's capability group was not negotiated"),
         client}

      is_map_key(notification, "stream_id") ->
        case Streams.ingest(client.streams, notification, wire) do
          {:ok, _, streams} -> {:ok, [], %{client | streams: streams}}
          {:error, error} -> {:error, error, client}
        end

      true ->
        {:ok, [{:notification, notification}], client}
    end
  end

  @doc """
  Answers a pending incoming request with a result (validated against the
  method's result schema and binding) or a `%SamgitaProtocol.Error{}`.
  The request stays pending until this succeeds.

  ## Options

    * `:now` - wall clock `DateTime` for approval deadlines. Defaults to
      `DateTime.utc_now()`, read only when a deadline is checked.

  ## Error reasons

  `:unknown_request` (not this exact pending request), `:invalid_result`,
  `:approval_mismatch`, `:approval_expired` (approving after the deadline;
  denying is always allowed).
  """
  @spec reply(t(), map(), map() | Error.t(), keyword()) ::
          {:ok, map(), t()} | {:error, Error.t(), t()}
  def reply(%__MODULE__{} = client, request, result, opts \\ []) do
    now = Contract.wall_clock!(opts)
    id = is_map(request) && request["id"]

    cond do
      client.state == :disconnected ->
        {:error, Error.new(:disconnected, "the connection is closed"), client}

      Map.get(client.incoming, id) != request ->
        {:error, Error.new(:unknown_request, "not a pending incoming request"), client}

      match?(%Error{}, result) ->
        {:ok, Message.error_response(request, result), drop_incoming(client, id)}

      true ->
        spec = Schema.method(request["method"])

        case Contract.check_result(spec, request["params"], result, now, %{
               trusted: false,
               max_depth: 32
             }) do
          :ok -> {:ok, Message.response(request, result), drop_incoming(client, id)}
          {:error, error} -> {:error, %{error | origin: :local}, client}
        end
    end
  end

  defp drop_incoming(client, id), do: %{client | incoming: Map.delete(client.incoming, id)}

  @doc "Incoming requests waiting for `reply/4`, by id."
  @spec incoming(t()) :: %{String.t() => map()}
  def incoming(%__MODULE__{incoming: incoming}), do: incoming

  @doc "Outgoing requests waiting for a response, by id."
  @spec pending(t()) :: %{String.t() => map()}
  def pending(%__MODULE__{outbox: outbox}),
    do: Map.new(outbox.pending, fn {id, e} -> {id, e.request} end)

  @doc """
  The transport closed. Every pending mutation becomes uncertain and yields
  `{:error, id, %Error{code: :ambiguous_disconnect}}`; every pending read
  yields `:disconnected`. Pending incoming requests can no longer be
  answered and are dropped. Nothing is re-sent, now or later.
  """
  @spec disconnect(t()) :: {:ok, [effect()], t()}
  def disconnect(%__MODULE__{} = client) do
    {effects, outbox} = Outbox.disconnect(client.outbox)
    client = transition(%{client | outbox: outbox, incoming: %{}}, :disconnect)
    {:ok, effects, client}
  end

  @doc """
  Ends pending requests whose deadline (`:now` at `request/4` plus
  `:request_timeout_ms`) is at or before `now_ms`: mutations become uncertain
  (`:ambiguous_disconnect`, `data["reason"] == "timeout"`), reads yield
  `:timeout`. Core timers only advance when you call this.
  """
  @spec expire(t(), integer()) :: {:ok, [effect()], t()}
  def expire(%__MODULE__{} = client, now_ms) when is_integer(now_ms) do
    {effects, outbox} = Outbox.expire(client.outbox, now_ms)
    {:ok, effects, %{client | outbox: outbox}}
  end

  @doc """
  Starts a new connection after `disconnect/1`: initialization is required
  again, the terminal-ID window is cleared, generated IDs use the next
  generation, uncertain commands and stream positions are kept. Sends
  nothing.
  """
  @spec reconnect(t()) :: {:ok, t()} | {:error, Error.t(), t()}
  def reconnect(%__MODULE__{state: :disconnected} = client) do
    client = %{
      transition(client, :reconnect)
      | outbox: Outbox.reset(client.outbox),
        negotiated: MapSet.new(),
        version: nil,
        connection_id: nil,
        offer: nil,
        resumes: Window.clear(client.resumes)
    }

    {:ok, client}
  end

  def reconnect(client),
    do:
      {:error,
       Error.new(
         :not_initialized,
         "reconnect/1 requires a disconnected client; call disconnect/1 first"
       ), client}

  @doc "Mutations whose outcome is unknown, by request id: `%{request: original, reason: reason}`."
  @spec uncertain(t()) :: %{String.t() => %{request: map(), reason: atom()}}
  def uncertain(%__MODULE__{outbox: outbox}), do: outbox.uncertain

  @doc """
  Clears an uncertain command after an authenticated host query or audited
  reconciliation established its `outcome` (`:applied` or `:not_applied`).
  """
  @spec resolve_uncertain(t(), String.t(), :applied | :not_applied) ::
          {:ok, t()} | {:error, Error.t(), t()}
  def resolve_uncertain(%__MODULE__{} = client, id, outcome)
      when outcome in [:applied, :not_applied] do
    case Outbox.resolve(client.outbox, id) do
      {:ok, outbox} -> {:ok, %{client | outbox: outbox}}
      {:error, error} -> {:error, error, client}
    end
  end

  # -- streams -------------------------------------------------------------------

  # Correlated stream/resume results waiting for receive_replay/2, oldest
  # forgotten first once max_completed are waiting.
  defp remember_resume(client, result),
    do: %{client | resumes: Window.put(client.resumes, Message.fingerprint(result), true)}

  @doc """
  Ingests the events of a correlated `stream/resume` result (one that this
  client received as `{:response, id, result}`) through the same buffer,
  duplicate and gap checks as live notifications. Atomic: on error nothing
  is buffered. Continue with the next page from the result's `cursor` while
  `has_more` is true.

  ## Error reasons

  `:uncorrelated_replay`, `:cursor_gap`,
  `:replay_conflict`, `:limit_exceeded`.
  """
  @spec receive_replay(t(), map()) :: {:ok, [effect()], t()} | {:error, Error.t(), t()}
  def receive_replay(%__MODULE__{} = client, result) do
    key = Message.fingerprint(result)

    cond do
      not Window.member?(client.resumes, key) ->
        {:error,
         Error.new(
           :uncorrelated_replay,
           "not the result of a stream/resume response on this connection"
         ), client}

      true ->
        case Streams.ingest_all(client.streams, result["events"]) do
          {:ok, streams} ->
            {:ok, [], %{client | streams: streams, resumes: Window.delete(client.resumes, key)}}

          {:error, error} ->
            {:error, error, client}
        end
    end
  end

  @doc """
  Delivers up to `max` buffered stream notifications in arrival order.
  Delivery does not advance a checkpoint: call `ack_cursor/3` after
  processing.
  """
  @spec drain(t(), non_neg_integer()) :: {:ok, [map()], t()}
  def drain(%__MODULE__{} = client, max) when is_integer(max) and max >= 0 do
    {notifications, streams} = Streams.drain(client.streams, max)
    {:ok, notifications, %{client | streams: streams}}
  end

  @doc """
  Marks a stream processed through `cursor` (at most the last delivered
  cursor). Acknowledging an already processed cursor is a no-op.
  """
  @spec ack_cursor(t(), String.t(), non_neg_integer()) :: {:ok, t()} | {:error, Error.t(), t()}
  def ack_cursor(%__MODULE__{} = client, stream_id, cursor)
      when is_binary(stream_id) and is_integer(cursor) and cursor >= 0 do
    case Streams.ack(client.streams, stream_id, cursor) do
      {:ok, streams} -> {:ok, %{client | streams: streams}}
      {:error, error} -> {:error, error, client}
    end
  end

  @doc """
  Releases a finished stream (for example once its turn completed): its
  processed position and retained content are dropped, so it no longer counts
  against `:max_streams` and no longer appears in `checkpoints/1`. A later
  notification of the same `stream_id` starts it again from cursor 1.
  Forgetting an unknown stream is a no-op.

  ## Error reasons

  `:unacknowledged_events` while any of its events is buffered, or delivered
  but not acknowledged with `ack_cursor/3`: forgetting it would lose them.
  """
  @spec forget_stream(t(), String.t()) :: {:ok, t()} | {:error, Error.t(), t()}
  def forget_stream(%__MODULE__{} = client, stream_id) when is_binary(stream_id) do
    case Streams.forget(client.streams, stream_id) do
      {:ok, streams} -> {:ok, %{client | streams: streams}}
      {:error, error} -> {:error, error, client}
    end
  end

  @doc """
  The processed positions to persist, scoped to the host:
  `%{"host_id" => host_id, "streams" => %{stream_id => cursor}}`. Restore with
  `new(host_id: host_id, checkpoints: map)`; never restore another host's map.
  """
  @spec checkpoints(t()) :: %{String.t() => term()}
  def checkpoints(%__MODULE__{} = client),
    do: %{"host_id" => client.host_id, "streams" => Streams.checkpoints(client.streams)}

  @doc "Number of buffered, undelivered stream notifications."
  @spec buffered(t()) :: non_neg_integer()
  def buffered(%__MODULE__{streams: streams}), do: Streams.buffered(streams)

  defp transition(client, event) do
    case Map.fetch(@transitions, {client.state, event}) do
      {:ok, state} ->
        %{client | state: state}

      :error ->
        raise ArgumentError, "illegal transition #{inspect(event)} from #{inspect(client.state)}"
    end
  end

  @doc false
  def transitions, do: @transitions
end
