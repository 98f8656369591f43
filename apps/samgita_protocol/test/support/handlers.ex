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
