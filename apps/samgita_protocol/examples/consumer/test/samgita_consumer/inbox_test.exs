defmodule SamgitaConsumer.InboxTest do
  use ExUnit.Case, async: true

  alias SamgitaConsumer.Inbox
  alias SamgitaProtocol.{Client, Codec, Error, Event, Server}

  @event Event.new(
           event_id: "evt-1",
           delivery_attempt_id: "att-1",
           created_at: "2026-01-01T00:00:00Z",
           correlation_id: "corr-1",
           project_ref: "proj-1",
           event_type: "task.created",
           payload: %{"title" => "Write the consumer example"}
         )

  # Every message crosses as JSON bytes, as over a real transport.
  defp wire(message) do
    {:ok, binary} = Codec.encode(message)
    binary
  end

  defp connect do
    {:ok, client} = Client.new(capabilities: ["project_events.v1"])

    {:ok, server} =
      Server.new(Inbox, Inbox.new(), capabilities: ["project_events.v1"], host_id: "consumer-1")

    {:ok, init, client} = Client.request(client, "connection/initialize", %{})
    {:ok, [response], server} = Server.receive(server, wire(init))
    {:ok, [{:response, _, result}], client} = Client.receive(client, wire(response))
    {client, server, result}
  end

  defp call(client, server, method, params, opts \\ []) do
    {:ok, request, client} = Client.request(client, method, params, opts)
    {:ok, [response], server} = Server.receive(server, wire(request))
    {:ok, [effect], client} = Client.receive(client, wire(response))
    {effect, client, server}
  end

  test "initialize negotiates project_events.v1 with the inbox host" do
    {client, _server, result} = connect()
    assert Client.state(client) == :ready
    assert Client.capabilities(client) == ["project_events.v1"]
    assert result["host_id"] == "consumer-1"
  end

  test "an event is received and stored once" do
    {c, s, _} = connect()

    {{:response, _, result}, _c, s} =
      call(c, s, "project/event.receive", %{"event" => @event}, command_id: "cmd-1")

    assert result == %{
             "event_id" => "evt-1",
             "delivery_attempt_id" => "att-1",
             "acceptance" => "received",
             "processing_status" => "pending"
           }

    inbox = Server.host_state(s)
    assert Inbox.events(inbox) == %{"evt-1" => Map.delete(@event, "delivery_attempt_id")}
    assert Inbox.attempts(inbox, "evt-1") == ["att-1"]
  end

  test "a retry built with Event.retry/2 keeps the identity and is deduplicated" do
    {c, s, _} = connect()

    {{:response, _, _}, c, s} =
      call(c, s, "project/event.receive", %{"event" => @event}, command_id: "cmd-1")

    retry = Event.retry(@event, "att-2")
    assert Map.delete(retry, "delivery_attempt_id") == Map.delete(@event, "delivery_attempt_id")

    {{:response, _, result}, c, s} =
      call(c, s, "project/event.receive", %{"event" => retry}, command_id: "cmd-2")

    assert result["event_id"] == "evt-1"
    assert result["delivery_attempt_id"] == "att-2"
    assert result["acceptance"] == "received"

    inbox = Server.host_state(s)
    assert map_size(Inbox.events(inbox)) == 1
    assert Inbox.attempts(inbox, "evt-1") == ["att-1", "att-2"]

    changed = %{retry | "payload" => %{"title" => "something else"}}

    {{:error, _, %Error{code: :conflict, origin: :remote}}, _c, s2} =
      call(c, s, "project/event.receive", %{"event" => changed}, command_id: "cmd-3")

    assert Server.host_state(s2) == inbox
  end

  test "a report is recorded with not_requested management acceptance" do
    {c, s, _} = connect()

    {{:response, _, _}, c, s} =
      call(c, s, "project/event.receive", %{"event" => @event}, command_id: "cmd-1")

    report = %{"event_id" => "evt-1", "outcome" => "completed", "summary" => "done"}

    {{:response, _, result}, c, s} =
      call(c, s, "project/event.report", report, command_id: "cmd-2")

    assert result == %{
             "event_id" => "evt-1",
             "report_status" => "recorded",
             "management_acceptance" => "not_requested"
           }

    assert Inbox.report(Server.host_state(s), "evt-1") == report

    {{:response, _, status}, c, s} =
      call(c, s, "project/event.status", %{"event_id" => "evt-1"})

    assert status["processing_status"] == "completed"

    managed = Map.put(report, "management_request", %{"transition" => "task.close"})

    {{:response, _, result}, _c, _s} =
      call(c, s, "project/event.report", managed, command_id: "cmd-3")

    assert result["management_acceptance"] == "rejected"
  end

  test "unknown events are not found" do
    {c, s, _} = connect()

    {{:error, _, %Error{code: :not_found}}, c, s} =
      call(c, s, "project/event.status", %{"event_id" => "nope"})

    report = %{"event_id" => "nope", "outcome" => "failed", "summary" => "no such event"}

    {{:error, _, %Error{code: :not_found}}, _c, _s} =
      call(c, s, "project/event.report", report, command_id: "cmd-1")
  end
end
