defmodule SamgitaProtocol.ReplayTest do
  use ExUnit.Case, async: true
  doctest SamgitaProtocol.Replay

  alias SamgitaProtocol.{Client, Error, Replay, Server}
  alias SamgitaProtocol.Test.Pair

  def delta(i, stream \\ nil) do
    n = %{
      "schema_version" => "1.0",
      "type" => "notification",
      "method" => "item/delta",
      "params" => %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "d#{i}"}
    }

    if stream, do: Map.merge(n, %{"stream_id" => stream, "cursor" => i}), else: n
  end

  defp fill(replay, range),
    do: Enum.reduce(range, replay, fn i, r -> elem(Replay.append(r, delta(i)), 2) end)

  test "append assigns contiguous cursors and checks sequenced input" do
    r = fill(Replay.new("s"), 1..3)
    assert Replay.last_cursor(r) == 3
    assert {:ok, %{"cursor" => 4}, r} = Replay.append(r, delta(4, "s"))
    assert {:error, %Error{code: :cursor_gap}, ^r} = Replay.append(r, delta(9, "s"))
    assert {:error, %Error{code: :foreign_stream}, ^r} = Replay.append(r, delta(5, "other"))
  end

  test "since pages at exactly 128 and 129 events" do
    r = fill(Replay.new("s"), 1..128)
    {:ok, page} = Replay.since(r, 0)
    assert length(page["events"]) == 128 and page["cursor"] == 128 and page["has_more"] == false

    r = fill(r, 129..129)
    {:ok, page} = Replay.since(r, 0)
    assert length(page["events"]) == 128 and page["has_more"] == true
    {:ok, page2} = Replay.since(r, page["cursor"])
    assert Enum.map(page2["events"], & &1["cursor"]) == [129] and page2["has_more"] == false
    assert {:ok, %{"events" => [], "cursor" => 129}} = Replay.since(r, 129)
    assert {:error, %Error{code: :invalid_cursor}} = Replay.since(r, 130)
  end

  test "retention eviction yields replay_gap" do
    r = fill(Replay.new("s", max_events: 10), 1..25)
    assert Replay.first_cursor(r) == 16
    assert {:error, %Error{code: :replay_gap}} = Replay.since(r, 14)
    assert {:ok, %{"events" => [%{"cursor" => 16} | _]}} = Replay.since(r, 15)

    r = fill(Replay.new("s", max_bytes: 1000), 1..50)
    assert Replay.first_cursor(r) > 1
  end

  describe "client stream buffer" do
    setup do
      {c, s, _} = Pair.new(max_buffered_notifications: 3, max_streams: 2)
      %{c: c, s: s}
    end

    test "duplicates ignored, conflicts and gaps fail, overflow fails before advancing", %{c: c} do
      {:ok, [], c} = Client.receive(c, Pair.wire(delta(1, "a")))
      assert {:ok, [], ^c} = Client.receive(c, Pair.wire(delta(1, "a")))
      changed = put_in(delta(1, "a"), ["params", "delta"], "other")
      assert {:error, %Error{code: :replay_conflict}, ^c} = Client.receive(c, Pair.wire(changed))
      assert {:error, %Error{code: :cursor_gap}, ^c} = Client.receive(c, Pair.wire(delta(3, "a")))
      {:ok, [], c} = Client.receive(c, Pair.wire(delta(2, "a")))
      {:ok, [], c} = Client.receive(c, Pair.wire(delta(3, "a")))

      assert {:error,
              %Error{code: :limit_exceeded, data: %{"limit" => "max_buffered_notifications"}},
              ^c} =
               Client.receive(c, Pair.wire(delta(4, "a")))

      {:ok, [n1], c} = Client.drain(c, 1)
      assert n1["cursor"] == 1
      assert {:error, %Error{code: :invalid_cursor}, ^c} = Client.ack_cursor(c, "a", 2)
      {:ok, c} = Client.ack_cursor(c, "a", 1)
      assert {:ok, [], ^c} = Client.receive(c, Pair.wire(delta(1, "a")))
      assert Client.checkpoints(c)["streams"] == %{"a" => 1}
    end

    test "stream count is bounded", %{c: c} do
      {:ok, _, c} = Client.receive(c, Pair.wire(delta(1, "a")))
      {:ok, _, c} = Client.receive(c, Pair.wire(delta(1, "b")))

      assert {:error, %Error{code: :limit_exceeded, data: %{"limit" => "max_streams"}}, ^c} =
               Client.receive(c, Pair.wire(delta(1, "c")))
    end

    test "replay pages are atomic and checked for foreign streams", %{c: c, s: s} do
      replay = fill(Replay.new("fake-stream"), 1..5)
      s = %{s | host_state: %{s.host_state | replay: replay}}

      {[{:response, _, page}], c, _} =
        Pair.call(c, s, "stream/resume", %{"stream_id" => "fake-stream", "cursor" => 0})

      assert {:error, %Error{code: :limit_exceeded}, c2} = Client.receive_replay(c, page)
      assert Client.buffered(c2) == 0

      foreign = %{page | "events" => [delta(1, "x")]}
      assert {:error, %Error{}, _} = Client.receive_replay(c, foreign)
    end
  end

  test "server marks a sequenced notification processed only after callback success" do
    {c, s, _} = Pair.new()
    {:ok, n, _c} = Client.notify(c, "item/delta", delta(1)["params"], stream_id: "up", cursor: 1)
    {:ok, [], s} = Pair.deliver(s, n)
    assert Server.positions(s) == %{"up" => 1}
    {:ok, [], s} = Pair.deliver(s, n)
    assert length(Server.host_state(s).notifications) == 1
    assert {:error, %Error{code: :cursor_gap}, [], _} = Pair.deliver(s, delta(3, "up"))
  end
end
