defmodule SamgitaProtocol.ServerTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Client, Error, Server}
  alias SamgitaProtocol.Test.{DurableInbox, Pair}

  @event %{
    "event_id" => "e1",
    "delivery_attempt_id" => "a1",
    "created_at" => "2026-01-01T00:00:00Z",
    "correlation_id" => "corr-1",
    "event_type" => "t",
    "payload" => %{}
  }

  defp connect(handler, state, opts) do
    {:ok, c} = Client.new()
    {:ok, s} = Server.new(handler, state, opts)
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, [resp], s} = Pair.deliver(s, init)
    {:ok, [{:response, _, _}], c} = Client.receive(c, Pair.wire(resp))
    {c, s}
  end

  test "only a durable host may answer acceptance: durable" do
    for {durable, expected} <- [{false, "internal_error"}, {true, nil}] do
      {c, s} = connect(DurableInbox, 0, capabilities: ["project_events.v1"], durable: durable)

      {:ok, req, _} =
        Client.request(c, "project/event.receive", %{"event" => @event}, command_id: "k")

      {:ok, [resp], s} = Pair.deliver(s, req)
      assert get_in(resp, ["error", "code"]) == expected
      # The handler ran either way: its effect is not undone.
      assert Server.host_state(s) == 1
    end
  end

  test "a second initialize and a reused id with different content are refused" do
    {c, s} = connect(DurableInbox, 0, capabilities: ["project_events.v1"])
    {:ok, req, _} = Client.request(c, "project/event.status", %{"event_id" => "e"})
    {:ok, [_], s} = Pair.deliver(s, req)
    {:ok, [resp], s} = Pair.deliver(s, put_in(req, ["params", "event_id"], "other"))
    assert resp["error"]["code"] == "conflict"

    init = %{
      req
      | "method" => "connection/initialize",
        "id" => "i2",
        "params" => %{"versions" => ["1.0"], "capabilities" => []}
    }

    {:ok, [resp], _} = Pair.deliver(s, init)
    assert resp["error"]["code"] == "already_initialized"
  end

  test "no common version fails initialization" do
    {:ok, s} = Server.new(DurableInbox, 0, capabilities: ["project_events.v1"])

    init = %{
      "schema_version" => "1.0",
      "type" => "request",
      "id" => "i",
      "correlation_id" => "i",
      "method" => "connection/initialize",
      "params" => %{"versions" => ["9.9"], "capabilities" => []}
    }

    {:ok, [resp], s} = Pair.deliver(s, init)
    assert resp["error"]["code"] == "no_common_version"
    assert Server.state(s) == :new
  end

  test "server-initiated requests need handle_response/3 and end on disconnect" do
    {_c, s} = connect(DurableInbox, 0, capabilities: ["project_events.v1"])

    assert {:error, %Error{code: :no_response_callback}, _} =
             Server.request(s, "project/event.status", %{"event_id" => "e"})

    {_c, s} =
      connect(SamgitaProtocol.FakeHost, SamgitaProtocol.FakeHost.new(),
        capabilities: SamgitaProtocol.Schema.groups()
      )

    {:ok, _req, s} = Server.request(s, "thread/start", %{}, command_id: "k")
    {:ok, s} = Server.disconnect(s)
    assert [{_, {:error, %Error{code: :ambiguous_disconnect}}}] = Server.host_state(s).responses
    assert {:error, %Error{code: :disconnected}, [], _} = Server.receive(s, "{}")
  end

  test "a failed notification callback does not advance the processed position" do
    {c, s} =
      connect(SamgitaProtocol.Test.StreamingInbox, 0,
        capabilities: ["project_events.v1", "streaming.v1"]
      )

    params = %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "fail"}
    {:ok, n, _} = Client.notify(c, "item/delta", params, stream_id: "up", cursor: 1)
    assert {:error, %Error{code: :internal_error}, [], s} = Pair.deliver(s, n)
    assert Server.positions(s) == %{}

    {:ok, n, _} =
      Client.notify(c, "item/delta", %{params | "delta" => "ok"}, stream_id: "up", cursor: 1)

    {:ok, [], s} = Pair.deliver(s, n)
    assert Server.positions(s) == %{"up" => 1}
    assert Server.host_state(s) == 100
  end

  test "invalid input with a recoverable request identity is answered, never handled" do
    {_c, s} = connect(DurableInbox, 0, capabilities: ["project_events.v1"])

    raw =
      ~s({"schema_version":"1.0","type":"request","id":"r1","correlation_id":"r1","method":"project/event.receive","params":{"event":{}}})

    assert {:error, %Error{code: :missing_command_id}, [resp], ^s} = Server.receive(s, raw)
    assert resp["error"]["code"] == "missing_command_id"
  end

  defmodule ApprovingHost do
    @moduledoc false
    # Approves everything (a host's decision, never the library's); answers
    # cancellations with a reason of the requested size.
    @behaviour SamgitaProtocol.Handler
    @impl true
    def methods, do: ["approval/request", "request/cancel"]
    @impl true
    def handle_request("approval/request", p, _ctx, n) do
      {:ok,
       %{"approval_id" => p["approval_id"], "action" => p["action"], "decision" => "approve"},
       n + 1}
    end

    def handle_request("request/cancel", %{"reason" => "tuple error"}, _ctx, n),
      do: {:error, Error.new(:not_found, "no such request", %{"why" => {:tuple}}), n + 1}

    def handle_request("request/cancel", %{"reason" => "huge error"}, _ctx, n),
      do: {:error, Error.new(:not_found, String.duplicate(<<1>>, 300)), n + 1}

    def handle_request("request/cancel", %{"request_id" => id} = p, _ctx, n) do
      result = %{"request_id" => id, "cancel_status" => "already_finished"}

      if p["reason"] == "huge",
        do: {:ok, Map.put(result, "request_id", String.duplicate(<<1>>, 200)), n + 1},
        else: {:ok, result, n + 1}
    end
  end

  describe "the handler's own result" do
    setup do
      {c, s} = connect(ApprovingHost, 0, capabilities: ["approvals.v1", "cancellation.v1"])
      %{c: c, s: s}
    end

    test "approving after the deadline is answered approval_expired, checked with the real clock",
         %{c: c, s: s} do
      action = %{"kind" => "shell", "description" => "ls"}
      params = %{"approval_id" => "ap", "action" => action, "deadline" => "2026-06-01T00:00:00Z"}
      {:ok, req, _} = Client.request(c, "approval/request", params)

      {:ok, [resp], _} = Server.receive(s, req, now: ~U[2026-05-31 23:59:59Z])
      assert resp["result"]["decision"] == "approve"

      {:ok, [resp], s} = Server.receive(s, req, now: ~U[2026-06-01 00:00:00Z])
      assert resp["error"]["code"] == "approval_expired"
      # The handler ran (its effect cannot be undone); only the reply changed.
      assert Server.host_state(s) == 1

      # Without :now the real clock decides: a deadline in the past expires.
      {:ok, req, _} =
        Client.request(c, "approval/request", %{params | "approval_id" => "ap2"}, id: "x2")

      {:ok, [resp], _} = Server.receive(s, req)
      assert resp["error"]["code"] == "approval_expired"

      {:ok, req, _} =
        Client.request(
          c,
          "approval/request",
          %{params | "approval_id" => "ap3", "deadline" => "2999-01-01T00:00:00Z"},
          id: "x3"
        )

      {:ok, [resp], _} = Server.receive(s, req)
      assert resp["result"]["decision"] == "approve"
    end

    test "a result that does not fit max_message_bytes becomes internal_error" do
      # 200 control characters: 6 bytes each once escaped as \u0001, so the
      # encoded response is larger than the estimate-free bound of 1,000.
      {c, s} =
        connect(ApprovingHost, 0,
          capabilities: ["approvals.v1", "cancellation.v1"],
          max_message_bytes: 1_000
        )

      {:ok, req, _} =
        Client.request(c, "request/cancel", %{"request_id" => "r", "reason" => "huge"})

      {:ok, [resp], _} = Server.receive(s, req)

      assert resp["error"] == %{
               "code" => "internal_error",
               "message" => "the host failed to handle the request"
             }

      {:ok, req, _} = Client.request(c, "request/cancel", %{"request_id" => "r"}, id: "ok")
      {:ok, [resp], _} = Server.receive(s, req)
      assert resp["result"]["cancel_status"] == "already_finished"

      # The handler's own typed error must be plain JSON and fit too.
      for {reason, id} <- [{"tuple error", "e1"}, {"huge error", "e2"}] do
        {:ok, req, _} =
          Client.request(c, "request/cancel", %{"request_id" => "r", "reason" => reason}, id: id)

        {:ok, [resp], _} = Server.receive(s, req)
        assert resp["error"]["code"] == "internal_error", reason
      end
    end
  end

  test "the server accepts exactly the bounds it enforces" do
    for key <- [:max_incoming_requests, :max_buffered_notifications, :max_stream_hashes] do
      assert_raise ArgumentError, ~r/unknown option #{inspect(key)}/, fn ->
        Server.new(ApprovingHost, 0, [{key, 1}, capabilities: ["approvals.v1", "cancellation.v1"]])
      end
    end

    assert {:ok, _} =
             Server.new(ApprovingHost, 0,
               capabilities: ["approvals.v1", "cancellation.v1"],
               max_completed: 1,
               max_streams: 1,
               max_outstanding_requests: 1
             )
  end

  test "processed positions survive a restart through :positions, and are checked" do
    opts = [capabilities: ["project_events.v1", "streaming.v1"]]
    {c, s} = connect(SamgitaProtocol.Test.StreamingInbox, 0, opts)
    params = %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "ok"}

    s =
      Enum.reduce(1..3, s, fn cursor, s ->
        {:ok, n, _} = Client.notify(c, "item/delta", params, stream_id: "up", cursor: cursor)
        {:ok, [], s} = Pair.deliver(s, n)
        s
      end)

    saved = Server.positions(s)
    assert saved == %{"up" => 3}

    # A restarted host restores them: 3 is a duplicate, 4 continues.
    {c, s} = connect(SamgitaProtocol.Test.StreamingInbox, 0, [positions: saved] ++ opts)
    {:ok, n3, _} = Client.notify(c, "item/delta", params, stream_id: "up", cursor: 3)
    assert {:ok, [], ^s} = Pair.deliver(s, n3)
    {:ok, n5, _} = Client.notify(c, "item/delta", params, stream_id: "up", cursor: 5)
    assert {:error, %Error{code: :cursor_gap}, [], ^s} = Pair.deliver(s, n5)
    {:ok, n4, _} = Client.notify(c, "item/delta", params, stream_id: "up", cursor: 4)
    assert {:ok, [], s} = Pair.deliver(s, n4)
    assert Server.positions(s) == %{"up" => 4}
    assert Server.host_state(s) == 100

    # A finished stream is released; the same id then starts again at 1.
    {:ok, s} = Server.forget_stream(s, "up")
    assert Server.positions(s) == %{}
    assert {:error, %Error{code: :cursor_gap}, [], ^s} = Pair.deliver(s, n5)

    assert {:ok, [], s} =
             Pair.deliver(
               s,
               elem(Client.notify(c, "item/delta", params, stream_id: "up", cursor: 1), 1)
             )

    assert Server.positions(s) == %{"up" => 1}

    for bad <- [
          %{"up" => -1},
          %{up: 1},
          [{"up", 1}],
          %{"" => 1},
          %{String.duplicate("s", 257) => 1}
        ] do
      assert_raise ArgumentError, ~r/:positions/, fn ->
        Server.new(SamgitaProtocol.Test.StreamingInbox, 0, [positions: bad] ++ opts)
      end
    end

    assert_raise ArgumentError, ~r/at most :max_streams \(1\)/, fn ->
      Server.new(
        SamgitaProtocol.Test.StreamingInbox,
        0,
        [positions: %{"a" => 1, "b" => 2}, max_streams: 1] ++ opts
      )
    end
  end

  test "a map no JSON decoder could produce is the caller's error: local, never answered" do
    {c, s} = connect(DurableInbox, 0, capabilities: ["project_events.v1"])
    {:ok, req, _} = Client.request(c, "project/event.status", %{"event_id" => "e"})

    for {bad, code} <- [
          {put_in(req, ["params"], %{event_id: "e"}), :invalid_key},
          {put_in(req, ["params", "event_id"], <<0xFF>>), :invalid_utf8},
          {put_in(req, ["params", "event_id"], {:tuple}), :invalid_field},
          {Map.put(req, "params", [1 | 2]), :invalid_params}
        ] do
      assert {:error, %Error{code: ^code} = error, outgoing, ^s} = Server.receive(s, bad)
      assert {error.origin, outgoing} == {:local, []}, inspect(bad)
    end

    # Valid JSON that breaks the schema is the peer's, and is answered.
    bad =
      Map.delete(req, "correlation_id") |> Map.put("correlation_id", "x") |> Map.put("extra", 1)

    assert {:error, %Error{code: :unknown_field, origin: :peer}, [resp], ^s} =
             Server.receive(s, bad)

    assert resp["error"]["code"] == "unknown_field"
  end
end
