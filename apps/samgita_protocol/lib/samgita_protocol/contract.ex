defmodule SamgitaProtocol.Contract do
  @moduledoc false
  # Contextual result rules: what a result must satisfy given the request it
  # answers. Schema validation (shape) happens first; these rules need the
  # pending request, which the envelope alone does not carry.

  alias SamgitaProtocol.Error
  alias SamgitaProtocol.Schema.Validator

  @doc false
  # Validates `result` for a request with `params` (shape, then context).
  # `now` is the caller's wall clock for approval deadlines; nil reads the
  # clock only when a deadline is actually checked.
  @spec check_result(map(), map(), map(), DateTime.t() | nil) :: :ok | {:error, Error.t()}
  def check_result(spec, params, result, now, opts \\ %{trusted: true, max_depth: 32}) do
    with :ok <- Validator.result(spec, result, opts) do
      rule(spec.method, params, result, now)
    end
  end

  defp rule("project/event.receive", %{"event" => event}, result, _now) do
    same(result, "event_id", event["event_id"]) ||
      same(result, "delivery_attempt_id", event["delivery_attempt_id"]) || :ok
  end

  defp rule("project/event.status", params, result, _now),
    do: same(result, "event_id", params["event_id"]) || :ok

  defp rule("project/event.report", params, result, _now) do
    requested = is_map_key(params, "management_request")
    acceptance = result["management_acceptance"]

    cond do
      mismatch = same(result, "event_id", params["event_id"]) ->
        mismatch

      requested and acceptance == "not_requested" ->
        invalid(
          "management_acceptance must be accepted or rejected when a transition was requested"
        )

      not requested and acceptance != "not_requested" ->
        invalid("management_acceptance must be not_requested when no transition was requested")

      true ->
        :ok
    end
  end

  defp rule(method, params, %{"thread" => thread}, _now)
       when method in ["thread/read", "thread/resume"],
       do: same(thread, "thread_id", params["thread_id"]) || :ok

  defp rule("turn/start", params, %{"turn" => turn}, _now),
    do: same(turn, "thread_id", params["thread_id"]) || :ok

  defp rule("turn/steer", params, %{"turn" => turn}, _now) do
    same(turn, "thread_id", params["thread_id"]) || same(turn, "turn_id", params["turn_id"]) ||
      :ok
  end

  defp rule("turn/interrupt", params, result, _now) do
    same(result, "thread_id", params["thread_id"]) || same(result, "turn_id", params["turn_id"]) ||
      :ok
  end

  defp rule("request/cancel", params, result, _now),
    do: same(result, "request_id", params["request_id"]) || :ok

  defp rule("stream/resume", params, result, _now), do: check_page(params, result)

  defp rule("approval/request", params, result, now) do
    cond do
      result["approval_id"] != params["approval_id"] or result["action"] != params["action"] ->
        {:error,
         Error.peer(
           :approval_mismatch,
           "the decision is not bound to the requested approval_id and action",
           %{"approval_id" => params["approval_id"]}
         )}

      result["decision"] == "approve" and expired?(params["deadline"], now) ->
        {:error,
         Error.peer(:approval_expired, "the approval arrived after its deadline", %{
           "approval_id" => params["approval_id"],
           "deadline" => params["deadline"]
         })}

      true ->
        :ok
    end
  end

  defp rule(_method, _params, _result, _now), do: :ok

  @doc false
  # A stream/resume page: same stream, events contiguous from cursor + 1,
  # result cursor = last event cursor (or the requested cursor when empty).
  def check_page(%{"stream_id" => stream_id, "cursor" => from}, result) do
    events = result["events"]

    with nil <- same(result, "stream_id", stream_id),
         :ok <- check_events(events, stream_id, from + 1) do
      last = if events == [], do: from, else: List.last(events)["cursor"]

      cond do
        result["cursor"] != last ->
          invalid("cursor must be the last returned event's cursor (or the requested cursor)")

        events == [] and result["has_more"] ->
          invalid("an empty page cannot have more events")

        true ->
          :ok
      end
    end
  end

  defp check_events([], _stream_id, _next), do: :ok

  defp check_events([event | rest], stream_id, next) do
    cond do
      event["stream_id"] != stream_id ->
        {:error,
         Error.peer(:foreign_stream, "a replayed event belongs to another stream", %{
           "stream_id" => stream_id
         })}

      event["cursor"] != next ->
        {:error,
         Error.peer(:cursor_gap, "replayed events are not contiguous", %{
           "expected" => next,
           "cursor" => event["cursor"]
         })}

      true ->
        check_events(rest, stream_id, next + 1)
    end
  end

  @doc false
  # The `:now` option of receive/3 and reply/4: the wall clock (a DateTime)
  # for approval deadlines, or nil to read it when a deadline is checked.
  # Checked up front: a monotonic integer here (the clock of request/4)
  # would otherwise fail only once a peer's approval arrives.
  @spec wall_clock!(keyword()) :: DateTime.t() | nil
  def wall_clock!(opts) do
    case Keyword.get(opts, :now) do
      nil ->
        nil

      %DateTime{} = now ->
        now

      other ->
        raise ArgumentError,
              "expected :now to be a DateTime (the wall clock for approval deadlines), got: #{inspect(other)}"
    end
  end

  @doc false
  def expired?(deadline, now) do
    case DateTime.from_iso8601(deadline) do
      {:ok, deadline, _} -> DateTime.compare(now || DateTime.utc_now(), deadline) != :lt
      _ -> true
    end
  end

  defp same(map, key, expected) do
    if Map.get(map, key) == expected,
      do: nil,
      else: invalid("#{key} does not match the request", %{"field" => key})
  end

  defp invalid(message, data \\ %{}),
    do: {:error, Error.peer(:invalid_result, message, data)}
end
