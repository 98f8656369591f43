defmodule SamgitaProtocol.PairTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Client, Error, Event, Replay, Server}
  alias SamgitaProtocol.Test.Pair

  @event %{
    "event_id" => "e1",
    "delivery_attempt_id" => "a1",
    "created_at" => "2026-01-01T00:00:00Z",
    "correlation_id" => "corr-1",
    "event_type" => "task.created",
    "payload" => %{"title" => "x"}
  }

  test "initialize negotiates version, intersection, connection and host ids" do
    {client, _server, result} = Pair.new(capabilities: ["project_events.v1", "sessions.v1"])
    assert result["version"] == "1.0"
    assert Enum.sort(result["capabilities"]) == ["project_events.v1", "sessions.v1"]
    assert result["host_id"] == "host-1"
    assert Client.state(client) == :ready
    assert Client.connection_id(client) == result["connection_id"]
  end

  test "project_events.v1: receive, retry, conflicting content, status, report" do
    {c, s, _} = Pair.new()

    {[{:response, _, r}], c, s} =
      Pair.call(c, s, "project/event.receive", %{"event" => @event}, command_id: "k1")

    assert r["acceptance"] == "received"

    retry = Event.retry(@event, "a2")

    {[{:response, _, r}], c, s} =
      Pair.call(c, s, "project/event.receive", %{"event" => retry}, command_id: "k2")

    assert r["delivery_attempt_id"] == "a2"

    changed = %{retry | "payload" => %{"title" => "changed"}}

    {[{:error, _, %Error{code: :conflict, origin: :remote}}], c, s} =
      Pair.call(c, s, "project/event.receive", %{"event" => changed}, command_id: "k3")

    {[{:response, _, r}], c, s} = Pair.call(c, s, "project/event.status", %{"event_id" => "e1"})
    assert r["processing_status"] == "pending"

    {[{:error, _, %Error{code: :not_found}}], c, s} =
      Pair.call(c, s, "project/event.status", %{"event_id" => "nope"})

    report = %{"event_id" => "e1", "outcome" => "completed", "summary" => "done"}

    {[{:response, _, r}], c, s} =
      Pair.call(c, s, "project/event.report", report, command_id: "k4")

    assert r == %{
             "event_id" => "e1",
             "report_status" => "recorded",
             "management_acceptance" => "not_requested"
           }

    report = Map.put(report, "management_request", %{"transition" => "task.close"})

    {[{:response, _, r}], _c, _s} =
      Pair.call(c, s, "project/event.report", report, command_id: "k5")

    assert r["management_acceptance"] == "rejected"
  end

  test "sessions.v1: thread and turn lifecycle, interrupt statuses" do
    {c, s, _} = Pair.new()

    {[{:response, _, %{"thread" => t}}], c, s} =
      Pair.call(c, s, "thread/start", %{}, command_id: "k1")

    tid = t["thread_id"]
    input = [%{"type" => "text", "text" => "hello"}]

    {[{:response, _, %{"turn" => turn}}], c, s} =
      Pair.call(c, s, "turn/start", %{"thread_id" => tid, "input" => input}, command_id: "k2")

    uid = turn["turn_id"]

    {[{:response, _, %{"turn" => _}}], c, s} =
      Pair.call(c, s, "turn/steer", %{"thread_id" => tid, "turn_id" => uid, "input" => input},
        command_id: "k3"
      )

    {[{:response, _, %{"interrupt_status" => "interrupted"}}], c, s} =
      Pair.call(c, s, "turn/interrupt", %{"thread_id" => tid, "turn_id" => uid}, command_id: "k4")

    {[{:response, _, %{"interrupt_status" => "already_finished"}}], c, s} =
      Pair.call(c, s, "turn/interrupt", %{"thread_id" => tid, "turn_id" => uid}, command_id: "k5")

    {[{:response, _, %{"turns" => [%{"status" => "interrupted"}]}}], c, s} =
      Pair.call(c, s, "thread/read", %{"thread_id" => tid})

    {[{:response, _, %{"thread" => %{"thread_id" => ^tid}}}], _c, _s} =
      Pair.call(c, s, "thread/resume", %{"thread_id" => tid}, command_id: "k6")
  end

  test "streaming.v1: stream/resume pages are ingested, drained and acknowledged" do
    {c, s, _} = Pair.new(host_id: "host-1")

    replay =
      Enum.reduce(1..3, Server.host_state(s).replay, fn i, r ->
        n = delta(i)
        {:ok, _, r} = Replay.append(r, n)
        r
      end)

    s = %{s | host_state: %{s.host_state | replay: replay}}

    {[{:response, _, page}], c, _s} =
      Pair.call(c, s, "stream/resume", %{"stream_id" => "fake-stream", "cursor" => 0})

    assert {:ok, [], c} = Client.receive_replay(c, page)
    assert {:error, %Error{code: :uncorrelated_replay}, c} = Client.receive_replay(c, page)
    {:ok, events, c} = Client.drain(c, 10)
    assert Enum.map(events, & &1["cursor"]) == [1, 2, 3]
    {:ok, c} = Client.ack_cursor(c, "fake-stream", 3)
    assert Client.checkpoints(c) == %{"host_id" => "host-1", "streams" => %{"fake-stream" => 3}}
  end

  test "approvals.v1: the fake host denies; server-initiated approvals are bound" do
    {c, s, _} = Pair.new()
    action = %{"kind" => "command", "description" => "rm -rf build"}
    params = %{"approval_id" => "ap1", "action" => action, "deadline" => "2099-01-01T00:00:00Z"}
    {[{:response, _, r}], c, s} = Pair.call(c, s, "approval/request", params)
    assert r["decision"] == "deny"

    {:ok, req, s} = Server.request(s, "approval/request", %{params | "approval_id" => "ap2"})
    {:ok, [{:request, incoming}], c} = Client.receive(c, Pair.wire(req))

    assert {:error, %Error{code: :approval_mismatch}, c} =
             Client.reply(c, incoming, %{
               "approval_id" => "other",
               "action" => action,
               "decision" => "approve"
             })

    late = DateTime.from_naive!(~N[2100-01-01 00:00:00], "Etc/UTC")

    assert {:error, %Error{code: :approval_expired}, c} =
             Client.reply(
               c,
               incoming,
               %{"approval_id" => "ap2", "action" => action, "decision" => "approve"},
               now: late
             )

    {:ok, reply, c} =
      Client.reply(c, incoming, %{
        "approval_id" => "ap2",
        "action" => action,
        "decision" => "approve"
      })

    assert Client.incoming(c) == %{}
    {:ok, [], s} = Pair.deliver(s, reply)
    assert [{_, {:ok, %{"decision" => "approve"}}}] = Server.host_state(s).responses
  end

  test "cancellation.v1: request/cancel reports intent, not resolution" do
    {c, s, _} = Pair.new()
    {[{:response, _, r}], _c, _s} = Pair.call(c, s, "request/cancel", %{"request_id" => "c1-9"})
    assert r == %{"request_id" => "c1-9", "cancel_status" => "already_finished"}
  end

  test "methods outside negotiated groups fail before sending and without calling the handler" do
    {c, s, _} = Pair.new(capabilities: ["sessions.v1"])

    assert {:error, %Error{code: :unsupported}, ^c} =
             Client.request(c, "project/event.status", %{"event_id" => "e"})

    raw = %{
      "schema_version" => "1.0",
      "type" => "request",
      "id" => "x1",
      "correlation_id" => "x1",
      "method" => "project/event.status",
      "params" => %{"event_id" => "e"}
    }

    {:ok, [resp], s2} = Pair.deliver(s, raw)
    assert resp["error"]["code"] == "unsupported"
    assert Server.host_state(s2) == Server.host_state(s)
  end

  test "nothing but initialize before initialization, on both sides" do
    {:ok, c} = Client.new()

    assert {:error, %Error{code: :not_initialized}, _} =
             Client.request(c, "thread/read", %{"thread_id" => "t"})

    {:ok, s} =
      Server.new(SamgitaProtocol.FakeHost, SamgitaProtocol.FakeHost.new(),
        capabilities: SamgitaProtocol.Schema.groups()
      )

    raw = %{
      "schema_version" => "1.0",
      "type" => "request",
      "id" => "x",
      "correlation_id" => "x",
      "method" => "thread/read",
      "params" => %{"thread_id" => "t"}
    }

    assert {:ok, [%{"error" => %{"code" => "not_initialized"}}], _} = Pair.deliver(s, raw)
  end

  test "required capabilities the host lacks fail initialization" do
    {:ok, c} = Client.new(required_capabilities: ["approvals.v1"])
    {:ok, s} = Server.new(SamgitaProtocol.FakeHost.Sessions, nil, capabilities: ["sessions.v1"])
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, [resp], _} = Pair.deliver(s, init)

    assert {:ok, [{:error, _, %Error{code: :missing_required_capability}}], c} =
             Client.receive(c, Pair.wire(resp))

    assert Client.state(c) == :new
  end

  test "malformed input never reaches the handler and gets a typed error" do
    {_c, s, _} = Pair.new()
    assert {:error, %Error{code: :invalid_json}, [], ^s} = Server.receive(s, "{not json")

    bad =
      ~s({"schema_version":"1.0","type":"request","id":"r1","correlation_id":"r1","method":"thread/read","params":{"thread_id":"t","evil":1}})

    assert {:error, %Error{code: :unknown_field}, [resp], ^s} = Server.receive(s, bad)
    assert resp["error"]["code"] == "unknown_field" and resp["id"] == "r1"
  end

  test "a raising handler becomes a safe internal error and the connection keeps working" do
    {:ok, c} = Client.new()

    {:ok, s} =
      Server.new(SamgitaProtocol.Test.RaisingHandler, :state, capabilities: ["cancellation.v1"])

    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, [resp], s} = Pair.deliver(s, init)
    {:ok, _, c} = Client.receive(c, Pair.wire(resp))

    for _ <- 1..2 do
      {:ok, req, _} = Client.request(c, "request/cancel", %{"request_id" => "secret-token"})
      assert {:ok, [resp], s2} = Pair.deliver(s, req)

      assert resp["error"] == %{
               "code" => "internal_error",
               "message" => "the host failed to handle the request"
             }

      assert Server.host_state(s2) == :state
    end
  end

  test "Server.new rejects handlers whose methods do not match the groups" do
    assert_raise ArgumentError, ~r/methods\/0/, fn ->
      Server.new(SamgitaProtocol.FakeHost.Sessions, nil,
        capabilities: ["sessions.v1", "approvals.v1"]
      )
    end

    assert_raise ArgumentError, ~r/unknown option/, fn -> Client.new(bogus: 1) end

    assert_raise ArgumentError, ~r/capability groups/, fn ->
      Client.new(capabilities: ["nope.v1"])
    end
  end

  defp delta(i) do
    %{
      "schema_version" => "1.0",
      "type" => "notification",
      "method" => "item/delta",
      "params" => %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "d#{i}"}
    }
  end
end
