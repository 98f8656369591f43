defmodule SamgitaConsumer.Inbox do
  @moduledoc """
  A project-events inbox: a `SamgitaProtocol.Handler` for `project_events.v1`.

  Events are kept in memory by `event_id`. A redelivery of the same event
  (any `delivery_attempt_id`, same original content) is answered again
  without storing it twice; changed content under a known `event_id` is a
  `:conflict`. Acceptance is `"received"` (this inbox is not durable), and
  reports are `"recorded"` with `"not_requested"` management acceptance, or
  `"rejected"` when a management transition is requested: a consumer has no
  authority over the project.
  """

  @behaviour SamgitaProtocol.Handler

  alias SamgitaProtocol.{Error, Schema}

  @type t :: %{
          events: %{String.t() => map()},
          attempts: %{String.t() => [String.t()]},
          reports: %{String.t() => map()}
        }

  @doc "An empty inbox."
  @spec new() :: t()
  def new, do: %{events: %{}, attempts: %{}, reports: %{}}

  @doc "The stored original events, by `event_id`."
  @spec events(t()) :: %{String.t() => map()}
  def events(inbox), do: inbox.events

  @doc "The delivery attempts seen for `event_id`, oldest first."
  @spec attempts(t(), String.t()) :: [String.t()]
  def attempts(inbox, event_id), do: inbox.attempts |> Map.get(event_id, []) |> Enum.reverse()

  @doc "The recorded report for `event_id`, or `nil`."
  @spec report(t(), String.t()) :: map() | nil
  def report(inbox, event_id), do: Map.get(inbox.reports, event_id)

  @impl true
  def methods, do: Schema.request_methods("project_events.v1")

  @impl true
  def handle_request("project/event.receive", %{"event" => event}, _ctx, inbox) do
    id = event["event_id"]
    attempt = event["delivery_attempt_id"]
    original = Map.delete(event, "delivery_attempt_id")

    case inbox.events do
      %{^id => ^original} ->
        {:ok, received(id, attempt), note_attempt(inbox, id, attempt)}

      %{^id => _} ->
        {:error,
         Error.new(:conflict, "event_id already received with different content", %{
           "event_id" => id
         }), inbox}

      _ ->
        inbox = %{inbox | events: Map.put(inbox.events, id, original)}
        {:ok, received(id, attempt), note_attempt(inbox, id, attempt)}
    end
  end

  def handle_request("project/event.status", %{"event_id" => id}, _ctx, inbox) do
    if Map.has_key?(inbox.events, id) do
      status = if Map.has_key?(inbox.reports, id), do: "completed", else: "pending"
      {:ok, %{"event_id" => id, "acceptance" => "received", "processing_status" => status}, inbox}
    else
      {:error, Error.new(:not_found, "unknown event", %{"event_id" => id}), inbox}
    end
  end

  def handle_request("project/event.report", %{"event_id" => id} = params, _ctx, inbox) do
    if Map.has_key?(inbox.events, id) do
      acceptance =
        if Map.has_key?(params, "management_request"), do: "rejected", else: "not_requested"

      {:ok,
       %{"event_id" => id, "report_status" => "recorded", "management_acceptance" => acceptance},
       %{inbox | reports: Map.put(inbox.reports, id, params)}}
    else
      {:error, Error.new(:not_found, "unknown event", %{"event_id" => id}), inbox}
    end
  end

  defp received(id, attempt),
    do: %{
      "event_id" => id,
      "delivery_attempt_id" => attempt,
      "acceptance" => "received",
      "processing_status" => "pending"
    }

  defp note_attempt(inbox, id, attempt),
    do: %{inbox | attempts: Map.update(inbox.attempts, id, [attempt], &[attempt | &1])}
end
