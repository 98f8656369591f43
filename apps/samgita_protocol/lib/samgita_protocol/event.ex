defmodule SamgitaProtocol.Event do
  @moduledoc """
  A project event's identity and content, as carried by
  `project/event.receive`.

  `event_id`, `created_at`, `correlation_id`, `causation_id`, the refs,
  `event_type` and `payload` are the original event and never change across
  deliveries; `delivery_attempt_id` is fresh for each attempt. A host must
  reject changed original content under an existing `event_id`.
  """
  @moduledoc since: "0.1.0"

  @type t :: %{String.t() => term()}

  @doc """
  The same event for a new delivery attempt: every field except
  `delivery_attempt_id` is preserved.

  ## Examples

      iex> event = %{"event_id" => "e1", "delivery_attempt_id" => "a1", "created_at" => "2026-01-01T00:00:00Z",
      ...>   "correlation_id" => "c1", "event_type" => "task.created", "payload" => %{"n" => 1}}
      iex> retried = SamgitaProtocol.Event.retry(event, "a2")
      iex> {retried["delivery_attempt_id"], Map.delete(retried, "delivery_attempt_id") == Map.delete(event, "delivery_attempt_id")}
      {"a2", true}

  """
  @spec retry(t(), String.t()) :: t()
  def retry(%{"event_id" => _} = event, new_attempt_id) when is_binary(new_attempt_id),
    do: Map.put(event, "delivery_attempt_id", new_attempt_id)

  @doc """
  Builds an event map from keyword fields (`:event_id`, `:delivery_attempt_id`,
  `:created_at`, `:correlation_id`, `:event_type`, `:payload`, and optional
  `:causation_id`, `:project_ref`, `:task_ref`). Validation happens when the
  request carrying it is built.
  """
  @spec new(keyword()) :: t()
  def new(fields) do
    for {k, v} <- fields, v != nil, into: %{}, do: {Atom.to_string(k), v}
  end
end
