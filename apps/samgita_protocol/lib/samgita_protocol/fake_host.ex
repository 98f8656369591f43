defmodule SamgitaProtocol.FakeHost do
  @moduledoc """
  An in-memory `SamgitaProtocol.Handler` for every capability group, for
  tests, examples and the WebSocket package's fake Agent. It is a consumer
  host: events are `received` (never `durable`), reports are `recorded` with
  `not_requested` management acceptance (a requested transition is
  `rejected`: a fake host has no authority), and it never approves anything.

  State is a map built by `new/1`; `stream/resume` serves the replay log in
  `state.replay`.
  """
  @moduledoc since: "0.1.0"

  @behaviour SamgitaProtocol.Handler

  alias SamgitaProtocol.{Error, Replay, Schema}

  @doc "A fresh fake host state with a replay log for `stream_id`."
  @spec new(keyword()) :: map()
  def new(opts \\ []) do
    %{
      events: %{},
      reports: %{},
      threads: %{},
      turns: %{},
      counter: 0,
      notifications: [],
      responses: [],
      replay: Replay.new(Keyword.get(opts, :stream_id, "fake-stream")),
      now: Keyword.get(opts, :now, "2026-01-01T00:00:00Z")
    }
  end

  @impl true
  def methods, do: Enum.flat_map(Schema.groups(), &Schema.request_methods/1)

  @impl true
  def handle_request("project/event.receive", %{"event" => event}, _ctx, state) do
    id = event["event_id"]
    original = Map.delete(event, "delivery_attempt_id")

    case state.events do
      %{^id => %{original: ^original}} ->
        {:ok, event_result(event), state}

      %{^id => _} ->
        {:error,
         Error.new(:conflict, "event_id already received with different content", %{
           "event_id" => id
         }), state}

      _ ->
        {:ok, event_result(event), put_in(state.events[id], %{original: original})}
    end
  end

  def handle_request("project/event.status", %{"event_id" => id}, _ctx, state) do
    if Map.has_key?(state.events, id),
      do:
        {:ok, %{"event_id" => id, "acceptance" => "received", "processing_status" => "pending"},
         state},
      else: {:error, Error.new(:not_found, "unknown event", %{"event_id" => id}), state}
  end

  def handle_request("project/event.report", %{"event_id" => id} = params, _ctx, state) do
    acceptance =
      if Map.has_key?(params, "management_request"), do: "rejected", else: "not_requested"

    {:ok,
     %{"event_id" => id, "report_status" => "recorded", "management_acceptance" => acceptance},
     put_in(state.reports[id], params)}
  end

  def handle_request("thread/start", _params, _ctx, state) do
    {id, state} = next_id(state, "thread")
    thread = %{"thread_id" => id, "status" => "idle", "created_at" => state.now}
    {:ok, %{"thread" => thread}, put_in(state.threads[id], thread)}
  end

  def handle_request(method, %{"thread_id" => id}, _ctx, state)
      when method in ["thread/read", "thread/resume"] do
    case state.threads do
      %{^id => thread} when method == "thread/read" ->
        turns = for {_, %{"thread_id" => ^id} = t} <- state.turns, do: t
        {:ok, %{"thread" => thread, "turns" => Enum.sort_by(turns, & &1["turn_id"])}, state}

      %{^id => thread} ->
        {:ok, %{"thread" => thread}, state}

      _ ->
        {:error, Error.new(:not_found, "unknown thread", %{"thread_id" => id}), state}
    end
  end

  def handle_request("turn/start", %{"thread_id" => thread_id}, _ctx, state) do
    if Map.has_key?(state.threads, thread_id) do
      {id, state} = next_id(state, "turn")
      turn = %{"turn_id" => id, "thread_id" => thread_id, "status" => "in_progress"}
      {:ok, %{"turn" => turn}, put_in(state.turns[id], turn)}
    else
      {:error, Error.new(:not_found, "unknown thread", %{"thread_id" => thread_id}), state}
    end
  end

  def handle_request("turn/steer", %{"turn_id" => id, "thread_id" => t}, _ctx, state) do
    case state.turns do
      %{^id => %{"thread_id" => ^t, "status" => "in_progress"} = turn} ->
        {:ok, %{"turn" => turn}, state}

      _ ->
        {:error, Error.new(:not_found, "no in-progress turn with this id", %{"turn_id" => id}),
         state}
    end
  end

  def handle_request("turn/interrupt", %{"turn_id" => id, "thread_id" => t}, _ctx, state) do
    case state.turns do
      %{^id => %{"thread_id" => ^t, "status" => "in_progress"} = turn} ->
        {:ok, interrupt(t, id, "interrupted"),
         put_in(state.turns[id], %{turn | "status" => "interrupted"})}

      %{^id => %{"thread_id" => ^t}} ->
        {:ok, interrupt(t, id, "already_finished"), state}

      _ ->
        {:error, Error.new(:not_found, "unknown turn", %{"turn_id" => id}), state}
    end
  end

  def handle_request(
        "stream/resume",
        %{"stream_id" => stream_id, "cursor" => cursor},
        _ctx,
        state
      ) do
    cond do
      stream_id != state.replay.stream_id ->
        {:error, Error.new(:not_found, "unknown stream", %{"stream_id" => stream_id}), state}

      true ->
        case Replay.since(state.replay, cursor) do
          {:ok, page} -> {:ok, page, state}
          {:error, error} -> {:error, error, state}
        end
    end
  end

  # The library never auto-approves, and neither does the fake host.
  def handle_request("approval/request", params, _ctx, state) do
    {:ok,
     %{
       "approval_id" => params["approval_id"],
       "action" => params["action"],
       "decision" => "deny",
       "reason" => "the fake host approves nothing"
     }, state}
  end

  # Requests are handled synchronously, so any earlier request has finished.
  def handle_request("request/cancel", %{"request_id" => id}, _ctx, state),
    do: {:ok, %{"request_id" => id, "cancel_status" => "already_finished"}, state}

  @impl true
  def handle_notification(_method, notification, state),
    do: {:ok, %{state | notifications: [notification | state.notifications]}}

  @impl true
  def handle_response(request, outcome, state),
    do: {:ok, %{state | responses: [{request, outcome} | state.responses]}}

  defp event_result(event) do
    %{
      "event_id" => event["event_id"],
      "delivery_attempt_id" => event["delivery_attempt_id"],
      "acceptance" => "received",
      "processing_status" => "pending"
    }
  end

  defp interrupt(thread, turn, status),
    do: %{"thread_id" => thread, "turn_id" => turn, "interrupt_status" => status}

  defp next_id(state, prefix) do
    n = state.counter + 1
    {"#{prefix}-#{n}", %{state | counter: n}}
  end
end
