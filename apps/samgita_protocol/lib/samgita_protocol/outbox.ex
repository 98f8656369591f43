defmodule SamgitaProtocol.Outbox do
  @moduledoc false
  # Outgoing requests of one side of a connection, shared by Client and
  # Server: pending requests, the bounded window of terminal identities
  # (completed or expired), and mutations whose outcome is uncertain.
  #
  # Invariant: a handed-out mutation is in exactly one of `pending`,
  # `uncertain` or (after a response) nowhere but the completed window.
  # Nothing here ever re-sends a request.

  alias SamgitaProtocol.{Codec, Contract, Error, Message, RecentIds, Schema}
  alias SamgitaProtocol.Schema.Checker

  @type entry :: %{
          request: map(),
          spec: Schema.method_spec(),
          deadline: integer()
        }

  @type t :: %__MODULE__{
          pending: %{String.t() => entry()},
          completed: RecentIds.t(),
          uncertain: %{String.t() => %{request: map(), reason: atom()}},
          pending_mutations: non_neg_integer(),
          generation: pos_integer(),
          counter: non_neg_integer(),
          prefix: String.t(),
          explicit_ids: boolean(),
          id_prefix: String.t(),
          id_generator: (pos_integer(), pos_integer() -> String.t()) | nil,
          max_outstanding_requests: pos_integer(),
          max_uncertain_commands: pos_integer(),
          max_message_bytes: pos_integer(),
          request_timeout_ms: pos_integer()
        }

  defstruct pending: %{},
            completed: RecentIds.new(128),
            uncertain: %{},
            pending_mutations: 0,
            generation: 1,
            counter: 0,
            prefix: "c",
            explicit_ids: false,
            id_prefix: "c1-",
            id_generator: nil,
            max_outstanding_requests: 64,
            max_uncertain_commands: 64,
            max_message_bytes: 1_048_576,
            request_timeout_ms: 30_000

  @spec new(String.t(), map()) :: t()
  def new(prefix, limits) do
    %__MODULE__{
      prefix: prefix,
      id_prefix: id_prefix(prefix, 1),
      completed: RecentIds.new(limits.max_completed),
      id_generator: limits.id_generator,
      max_outstanding_requests: limits.max_outstanding_requests,
      max_uncertain_commands: limits.max_uncertain_commands,
      max_message_bytes: limits.max_message_bytes,
      request_timeout_ms: limits.request_timeout_ms
    }
  end

  defp id_prefix(prefix, generation), do: "#{prefix}#{generation}-"

  # Connection-generation-scoped default IDs: "c2-17" is the 17th request of
  # the client's second connection, so IDs never repeat across reconnects.
  @spec next_id(t()) :: {String.t(), t()}
  def next_id(%__MODULE__{counter: counter, generation: gen} = outbox) do
    counter = counter + 1

    id =
      case outbox.id_generator do
        nil -> <<outbox.id_prefix::binary, Integer.to_string(counter)::binary>>
        fun -> fun.(gen, counter)
      end

    {id, %{outbox | counter: counter}}
  end

  # A default id skips ids an explicit `:id` already took (ids in use are
  # bounded by the pending, completed and uncertain bounds, and default ids
  # never repeat, so this ends). A custom generator's id is taken as it is:
  # it may return the same id again, and check/3 answers `conflict`.
  defp next_free_id(%{id_generator: nil} = outbox) do
    {id, next} = next_id(outbox)
    if in_use?(next, id), do: next_free_id(next), else: {id, next}
  end

  defp next_free_id(outbox), do: next_id(outbox)

  @doc false
  # Builds, validates and records one outgoing request (shared by Client and
  # Server): the `:id` option or a generated one, bounds, identity reuse and
  # the message size checked before anything is recorded (a request that
  # cannot be sent must never become pending), the deadline from `:now`
  # (monotonic ms) plus the request timeout. On error the outbox is unchanged.
  # The caller has already run check_request_opts!/1.
  @spec hand_out(t(), Schema.method_spec(), map(), keyword()) ::
          {:ok, map(), t()} | {:error, Error.t()}
  def hand_out(outbox, spec, params, opts) do
    {id, next} =
      case Keyword.fetch(opts, :id) do
        {:ok, id} -> {id, %{outbox | explicit_ids: true}}
        :error -> next_free_id(outbox)
      end

    with :ok <- check(next, id, spec),
         {:ok, message} <-
           validate(Message.request(id, spec.method, params, opts), spec, opts, outbox),
         :ok <- Codec.check_size(message, outbox.max_message_bytes) do
      now = Keyword.get_lazy(opts, :now, fn -> System.monotonic_time(:millisecond) end)
      {:ok, message, put(next, message, spec, now)}
    end
  end

  # A read with no options and a default id ("c1-17") has an envelope made
  # only of our constants and that id: only the caller's params need a
  # check. Anything else, and any failure, takes the full validation, which
  # names the error.
  defp validate(message, %{mutation: false} = spec, [], %{id_generator: nil}) do
    case Checker.params(spec, message["params"], {Codec.default_max_depth(), true}) do
      :ok -> {:ok, message}
      :slow -> Codec.validate(message)
    end
  end

  defp validate(message, _spec, _opts, _outbox), do: Codec.validate(message)

  @request_opts [:id, :correlation_id, :causation_id, :command_id, :project_ref, :task_ref, :now]

  @doc false
  # Per-call options are caller code, not peer input: a misspelt or
  # mistyped option raises like an option of `new`, instead of silently
  # sending a request without the context the caller meant to give it.
  # Checked first, whatever the connection state.
  @spec check_request_opts!(keyword()) :: :ok
  def check_request_opts!([]), do: :ok

  def check_request_opts!(opts) do
    Message.check_opts!(opts, @request_opts, "request")

    case Keyword.fetch(opts, :now) do
      {:ok, now} when not is_integer(now) ->
        raise ArgumentError,
              "expected :now to be monotonic milliseconds (an integer, the clock of expire/2), got: #{inspect(now)}"

      _ ->
        :ok
    end
  end

  @doc false
  # Checks bounds and identity reuse before anything is recorded.
  @spec check(t(), String.t(), Schema.method_spec()) :: :ok | {:error, Error.t()}
  def check(outbox, id, spec) do
    cond do
      in_use?(outbox, id) ->
        {:error,
         Error.new(:conflict, "request id is already in use on this connection", %{"id" => id})}

      map_size(outbox.pending) >= outbox.max_outstanding_requests ->
        limit(:max_outstanding_requests, outbox.max_outstanding_requests)

      spec.mutation and
          outbox.pending_mutations + map_size(outbox.uncertain) >= outbox.max_uncertain_commands ->
        # A mutation in flight may become uncertain; refuse it now so a later
        # disconnect can never overflow the uncertain set.
        limit(:max_uncertain_commands, outbox.max_uncertain_commands)

      true ->
        :ok
    end
  end

  # A default id ("c2-17") is new by construction while every id of this
  # outbox was generated: the counter only grows and the generation is in
  # the id. One explicit `:id` (which may look like a future default id) and
  # every later id is looked up.
  defp in_use?(%{explicit_ids: false, id_generator: nil}, _id), do: false

  defp in_use?(outbox, id) do
    is_map_key(outbox.pending, id) or RecentIds.member?(outbox.completed, id) or
      is_map_key(outbox.uncertain, id)
  end

  @spec put(t(), map(), Schema.method_spec(), integer()) :: t()
  def put(outbox, %{"id" => id} = request, spec, now_ms) do
    entry = %{request: request, spec: spec, deadline: now_ms + outbox.request_timeout_ms}

    %{
      outbox
      | pending: Map.put(outbox.pending, id, entry),
        pending_mutations: outbox.pending_mutations + if(spec.mutation, do: 1, else: 0)
    }
  end

  @doc false
  # Matches an incoming (envelope-valid) response. `wire` is the binary it
  # was decoded from (nil for a map handed in); `now` the
  # wall clock for approval deadlines (nil: read it only when needed).
  #
  # Returns `{:ok, {:result, entry, result}, outbox}`,
  # `{:ok, {:error, entry, error}, outbox}`, `{:ok, :duplicate, outbox}` or
  # `{:error, error, outbox}`. A result that fails its method's schema or
  # context settles the request as an error; for a mutation the command is
  # kept in `uncertain`, because the peer may have performed it.
  @spec receive_response(t(), map(), binary() | nil, DateTime.t() | nil) ::
          {:ok, {:result | :error, entry(), term()} | :duplicate, t()} | {:error, Error.t(), t()}
  def receive_response(outbox, %{"id" => id} = response, wire, now) do
    case Map.fetch(outbox.pending, id) do
      {:ok, entry} ->
        settle(outbox, id, entry, response, Message.window_key(response, wire), now)

      :error ->
        case RecentIds.fetch(outbox.completed, id) do
          {:ok, {tag, _} = key} when tag in [:wire, :md5] ->
            if Message.same_content?(key, response, wire),
              do: {:ok, :duplicate, outbox},
              else:
                {:error, conflicting(id, "differs from the response already received"), outbox}

          {:ok, :expired} ->
            {:error, conflicting(id, "arrived after the request expired"), outbox}

          :error ->
            {:error,
             Error.peer(:unknown_response, "response to an unknown or forgotten request id", %{
               "id" => id
             }), outbox}
        end
    end
  end

  defp settle(outbox, id, entry, response, key, now) do
    cond do
      not Message.echoes?(entry.request, response) ->
        {:error,
         Error.peer(:mismatched_response, "response does not echo the request's identity", %{
           "id" => id
         }), outbox}

      true ->
        # The window holds the completed response's content key itself
        # ({:wire, _} or {:md5, _}) or :expired.
        outbox = finish(outbox, id, entry, key)

        # A valid response carries exactly one of result and error.
        case response do
          %{"result" => result} ->
            %{request: %{"params" => params}} = entry

            case Contract.check_result(entry.spec, params, result, now) do
              :ok ->
                {:ok, {:result, entry, result}, outbox}

              {:error, error} ->
                {:ok, {:error, entry, error},
                 hold_if_mutation(outbox, id, entry, :invalid_result)}
            end

          %{"error" => error} ->
            {:ok, {:error, entry, Error.from_wire(error)}, outbox}
        end
    end
  end

  defp finish(outbox, id, entry, marker) do
    %{
      outbox
      | pending: Map.delete(outbox.pending, id),
        pending_mutations: outbox.pending_mutations - if(entry.spec.mutation, do: 1, else: 0),
        # check/3 refused the id while it was remembered, and it has been
        # pending since: it is not in the window.
        completed: RecentIds.add(outbox.completed, id, marker)
    }
  end

  defp hold_if_mutation(outbox, id, %{spec: %{mutation: true}, request: request}, reason),
    do: %{outbox | uncertain: Map.put(outbox.uncertain, id, %{request: request, reason: reason})}

  defp hold_if_mutation(outbox, _id, _entry, _reason), do: outbox

  @doc false
  # Every pending request ends now: mutations become uncertain
  # (`:ambiguous_disconnect`), reads fail with `:disconnected`.
  @spec disconnect(t()) :: {[{:error, String.t(), Error.t()}], t()}
  def disconnect(outbox) do
    abandon(outbox, Map.keys(outbox.pending), :disconnect)
  end

  @doc false
  # Pending requests whose deadline is at or before `now_ms` end: mutations
  # become uncertain, reads fail with `:timeout`. Their IDs stay in the
  # terminal window as expired, so late replies are `:conflicting_response`.
  @spec expire(t(), integer()) :: {[{:error, String.t(), Error.t()}], t()}
  def expire(outbox, now_ms) do
    ids = for {id, %{deadline: d}} <- outbox.pending, d <= now_ms, do: id
    abandon(outbox, ids, :timeout)
  end

  defp abandon(outbox, ids, reason) do
    ids
    |> Enum.sort_by(&pending_order(outbox, &1))
    |> Enum.map_reduce(outbox, fn id, outbox ->
      entry = Map.fetch!(outbox.pending, id)
      outbox = finish(outbox, id, entry, :expired)

      if entry.spec.mutation do
        error =
          Error.new(
            :ambiguous_disconnect,
            "the mutation's outcome is unknown; reconcile with the host before retrying",
            %{
              "id" => id,
              "command_id" => entry.request["command_id"],
              "reason" => Atom.to_string(reason)
            }
          )

        {{:error, id, error}, hold_if_mutation(outbox, id, entry, reason)}
      else
        {code, message} =
          if reason == :timeout,
            do: {:timeout, "the request timed out"},
            else: {:disconnected, "the connection closed before a response"}

        {{:error, id, Error.new(code, message, %{"id" => id})}, outbox}
      end
    end)
  end

  defp pending_order(outbox, id), do: {outbox.pending[id].deadline, id}

  @doc false
  # A new connection: terminal identities are forgotten (generated IDs carry
  # the new generation), uncertain commands are kept.
  @spec reset(t()) :: t()
  def reset(outbox) do
    %{
      outbox
      | pending: %{},
        pending_mutations: 0,
        completed: RecentIds.clear(outbox.completed),
        generation: outbox.generation + 1,
        id_prefix: id_prefix(outbox.prefix, outbox.generation + 1),
        counter: 0
    }
  end

  @spec resolve(t(), String.t()) :: {:ok, t()} | {:error, Error.t()}
  def resolve(outbox, id) do
    if is_map_key(outbox.uncertain, id) do
      {:ok, %{outbox | uncertain: Map.delete(outbox.uncertain, id)}}
    else
      {:error,
       Error.new(:unknown_uncertain, "no uncertain command with this request id", %{"id" => id})}
    end
  end

  defp conflicting(id, why),
    do: Error.peer(:conflicting_response, "response #{why}", %{"id" => id})

  defp limit(name, max) do
    {:error,
     Error.new(:limit_exceeded, "#{name} (#{max}) reached", %{
       "limit" => Atom.to_string(name),
       "max" => max
     })}
  end

  @doc false
  def limit_error(name, max, origin \\ :local) do
    {:error, error} = limit(name, max)
    %{error | origin: origin}
  end
end
