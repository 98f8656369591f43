defmodule SamgitaProtocol.Test.RaisingHandler do
  @moduledoc false
  @behaviour SamgitaProtocol.Handler
  @impl true
  def methods, do: ["request/cancel"]
  @impl true
  def handle_request(_method, params, _ctx, _state), do: raise("boom #{params["request_id"]}")
end

defmodule SamgitaProtocol.FakeHost.Sessions do
  @moduledoc false
  # The fake host restricted to sessions.v1.
  @behaviour SamgitaProtocol.Handler
  @impl true
  def methods, do: SamgitaProtocol.Schema.request_methods("sessions.v1")
  @impl true
  def handle_request(m, p, c, s), do: SamgitaProtocol.FakeHost.handle_request(m, p, c, s)
end

defmodule SamgitaProtocol.Test.StreamHost do
  @moduledoc false
  # A host serving several replay logs (state: %{stream_id => Replay}).
  @behaviour SamgitaProtocol.Handler
  alias SamgitaProtocol.{Error, Replay}
  @impl true
  def methods, do: ["stream/resume"]
  @impl true
  def handle_request("stream/resume", %{"stream_id" => id, "cursor" => cursor}, _ctx, replays) do
    with %Replay{} = r <- Map.get(replays, id, {:error, Error.new(:not_found, "unknown stream")}),
         {:ok, page} <- Replay.since(r, cursor) do
      {:ok, page, replays}
    else
      {:error, error} -> {:error, error, replays}
    end
  end
end

defmodule SamgitaProtocol.Test.DurableInbox do
  @moduledoc false
  # Claims durability; the server only lets it through with durable: true.
  # Notifications fail when they say "fail", to test processed positions.
  @behaviour SamgitaProtocol.Handler
  alias SamgitaProtocol.Error
  @impl true
  def methods, do: SamgitaProtocol.Schema.request_methods("project_events.v1")
  @impl true
  def handle_request("project/event.receive", %{"event" => e}, _ctx, n) do
    {:ok,
     %{
       "event_id" => e["event_id"],
       "delivery_attempt_id" => e["delivery_attempt_id"],
       "acceptance" => "durable",
       "processing_status" => "pending"
     }, n + 1}
  end

  def handle_request(_m, _p, _ctx, n), do: {:error, Error.new(:not_found, "nothing here"), n}
  @impl true
  def handle_notification(_method, %{"params" => %{"delta" => "fail"}}, n),
    do: {:error, Error.new(:internal_error, "refused"), n}

  def handle_notification(_method, _n, n), do: {:ok, n + 100}
end

defmodule SamgitaProtocol.Test.StreamingInbox do
  @moduledoc false
  @behaviour SamgitaProtocol.Handler
  alias SamgitaProtocol.Test.DurableInbox
  @impl true
  def methods, do: DurableInbox.methods() ++ ["stream/resume"]
  @impl true
  def handle_request(m, p, c, s), do: DurableInbox.handle_request(m, p, c, s)
  @impl true
  def handle_notification(m, n, s), do: DurableInbox.handle_notification(m, n, s)
end
