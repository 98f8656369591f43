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
