defmodule SamgitaProtocol.ReplayTest do
  use ExUnit.Case, async: true
  doctest SamgitaProtocol.Replay

  alias SamgitaProtocol.{Client, Codec, Error, Replay, Server}
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

  # A page of `since(r, from)` is exactly the events `from + 1 .. upto` that
  # `fill/2` appended from cursor 1 (so delta i has cursor i).
  defp assert_page(r, from, upto, more) do
    {:ok, page} = Replay.since(r, from)
    assert Enum.map(page["events"], & &1["cursor"]) == Enum.to_list((from + 1)..upto//1)

    assert Enum.map(page["events"], & &1["params"]["delta"]) ==
             Enum.map((from + 1)..upto//1, &"d#{&1}")

    assert {page["cursor"], page["has_more"]} == {upto, more}
  end

  defp retained_events(r, cursor) do
    {:ok, page} = Replay.since(r, cursor)

    if page["has_more"],
      do: page["events"] ++ retained_events(r, page["cursor"]),
      else: page["events"]
  end

  defp encoded_size(event), do: event |> Codec.encode() |> elem(1) |> byte_size()

  describe "chunked storage (chunk k holds cursors 128k+1 .. 128k+128)" do
    test "pages starting and ending exactly at chunk boundaries" do
      r = fill(Replay.new("s"), 1..300)
      assert_page(r, 0, 128, true)
      assert_page(r, 127, 255, true)
      assert_page(r, 128, 256, true)
      assert_page(r, 255, 300, false)
      assert_page(r, 256, 300, false)

      # The newest event closes a chunk: everything is sealed, the tail empty.
      r = fill(Replay.new("s"), 1..256)
      assert_page(r, 0, 128, true)
      assert_page(r, 127, 255, true)
      assert_page(r, 128, 256, false)
      assert_page(r, 255, 256, false)
      assert_page(r, 256, 256, false)

      # The next append opens a new tail after the sealed chunks.
      r = fill(r, 257..257)
      assert_page(r, 128, 256, true)
      assert_page(r, 129, 257, false)
      assert_page(r, 256, 257, false)
    end

    test "a page spanning a sealed chunk and the unsealed tail" do
      r = fill(Replay.new("s"), 1..200)
      assert_page(r, 100, 200, false)
      assert_page(r, 72, 200, false)
      assert_page(r, 60, 188, true)
      assert_page(r, 150, 200, false)

      # Only the end of the sealed chunk is retained, the rest is in the tail.
      r = fill(Replay.new("s", max_events: 10), 1..133)
      assert Replay.first_cursor(r) == 124
      assert_page(r, 123, 133, false)
      assert_page(r, 130, 133, false)
      assert {:error, %Error{code: :replay_gap}} = Replay.since(r, 122)

      # Eviction inside the tail, before it was ever sealed.
      r = fill(Replay.new("s", max_events: 10), 1..50)
      assert Replay.first_cursor(r) == 41
      assert_page(r, 40, 50, false)
    end

    test "eviction that empties a whole chunk" do
      r = fill(Replay.new("s", max_events: 128), 1..256)
      assert Replay.first_cursor(r) == 129
      assert_page(r, 128, 256, false)

      assert {:error, %Error{code: :replay_gap, data: %{"first_retained" => 129}}} =
               Replay.since(r, 127)

      r = fill(r, 257..257)
      assert Replay.first_cursor(r) == 130
      assert_page(r, 129, 257, false)
      assert {:error, %Error{code: :replay_gap}} = Replay.since(r, 128)
    end

    test "evicted events are released, not only hidden" do
      # Same retained window shape (one sealed chunk, 28 evicted slots, empty
      # tail): a log that evicted ten times more holds no more memory.
      small = fill(Replay.new("s", max_events: 100), 1..256)
      large = fill(Replay.new("s", max_events: 100), 1..2560)
      assert :erts_debug.flat_size(large) == :erts_debug.flat_size(small)

      # A log capped below a chunk keeps the tail bounded too.
      small = fill(Replay.new("s", max_events: 5), 1..10)
      large = fill(Replay.new("s", max_events: 5), 1..1290)
      assert :erts_debug.flat_size(large) == :erts_debug.flat_size(small)

      # Beyond the retained events themselves, a log holds only a few words
      # per event and at most two chunk tuples: no evicted event lingers in
      # a partly evicted chunk. Both windows start in a sealed chunk that was
      # sealed before its leading slots were evicted, and end in the tail.
      for {opts, n} <- [{[max_events: 100], 2600}, {[max_bytes: 3000], 1035}] do
        r = fill(Replay.new("s", opts), 1..n)
        events = retained_events(r, Replay.first_cursor(r) - 1)
        overhead = :erts_debug.flat_size(r) - Enum.sum(Enum.map(events, &:erts_debug.flat_size/1))
        assert overhead <= 3 * length(events) + 2 * (Replay.page_size() + 1) + 64
      end
    end

    test "byte-bound eviction across chunk boundaries keeps exact accounting" do
      {sequenced, _} =
        Enum.map_reduce(1..300, Replay.new("s"), fn i, r ->
          {:ok, n, r} = Replay.append(r, delta(i))
          {n, r}
        end)

      sizes = Enum.map(sequenced, &encoded_size/1)
      # Exactly events 101..300 fit: one byte less and 101 would go too.
      max_bytes = sizes |> Enum.drop(100) |> Enum.sum()
      r = fill(Replay.new("s", max_bytes: max_bytes), 1..300)
      assert Replay.first_cursor(r) == 101
      assert_page(r, 100, 228, true)
      assert {:error, %Error{code: :replay_gap}} = Replay.since(r, 99)

      r1 = fill(Replay.new("s", max_bytes: max_bytes - 1), 1..300)
      assert Replay.first_cursor(r1) == 102

      # One large event evicts from the middle of chunk 0, through the whole
      # of chunk 1, into chunk 2.
      big = put_in(delta(301)["params"]["delta"], String.duplicate("x", 28_000))
      {:ok, big, r} = Replay.append(r, big)
      # The oldest events go until the rest fits: the shortest prefix of the
      # retained sizes that covers the excess.
      retained = Enum.drop(sizes, 100) ++ [encoded_size(big)]
      excess = Enum.sum(retained) - max_bytes
      evicted = Enum.count(Enum.scan(retained, &(&1 + &2)), &(&1 < excess)) + 1
      first = 101 + evicted
      assert first in 258..300
      assert Replay.first_cursor(r) == first
      assert {:error, %Error{code: :replay_gap}} = Replay.since(r, first - 2)
      {:ok, page} = Replay.since(r, first - 1)
      assert Enum.map(page["events"], & &1["cursor"]) == Enum.to_list(first..301)
      assert List.last(page["events"]) == big
    end

    test "matches a plain-list reference model under random appends and pages" do
      seed = ExUnit.configuration()[:seed]
      :rand.seed(:exsss, {seed, 128, 3})

      for run <- 1..12 do
        max_events = Enum.random([1, 3, 100, 127, 128, 129, 300])
        max_bytes = Enum.random([400, 2_000, 25_000, 1_000_000])
        r = Replay.new("s", max_events: max_events, max_bytes: max_bytes)
        m = %{events: [], last: 0, max_events: max_events, max_bytes: max_bytes}

        Enum.reduce(1..500, {r, m}, fn step, {r, m} ->
          ctx =
            "seed #{seed}, run #{run}, step #{step}, " <>
              "max_events #{max_events}, max_bytes #{max_bytes}"

          {r, m} = random_step(r, m, ctx)
          assert Replay.last_cursor(r) == m.last, ctx
          assert Replay.first_cursor(r) == model_first(m), ctx
          {r, m}
        end)
      end
    end
  end

  # Reference model: the retained `{event, encoded size}` list, oldest first.
  defp model_first(m), do: m.last - length(m.events) + 1

  defp model_append(m, event) do
    size = encoded_size(event)

    if size > m.max_bytes do
      {:error, :limit_exceeded, m}
    else
      events = model_evict(m.events ++ [{event, size}], m)
      {:ok, event, %{m | events: events, last: m.last + 1}}
    end
  end

  defp model_evict(events, m) do
    bytes = events |> Enum.map(&elem(&1, 1)) |> Enum.sum()

    if length(events) > m.max_events or bytes > m.max_bytes,
      do: model_evict(tl(events), m),
      else: events
  end

  defp model_since(m, cursor) do
    cond do
      cursor > m.last ->
        {:error, :invalid_cursor}

      cursor + 1 < model_first(m) ->
        {:error, :replay_gap}

      true ->
        events =
          m.events
          |> Enum.map(&elem(&1, 0))
          |> Enum.filter(&(&1["cursor"] > cursor))
          |> Enum.take(128)

        upto = if events == [], do: cursor, else: List.last(events)["cursor"]

        {:ok,
         %{"stream_id" => "s", "cursor" => upto, "events" => events, "has_more" => upto < m.last}}
    end
  end

  defp random_step(r, m, ctx) do
    case Enum.random([:append, :append, :append, :sequenced, :since, :since]) do
      :append ->
        n = put_in(delta(0)["params"]["delta"], String.duplicate("x", :rand.uniform(300)))
        sequenced = Map.merge(n, %{"stream_id" => "s", "cursor" => m.last + 1})
        check_append(r, m, n, sequenced, ctx)

      :sequenced ->
        # Usually the next cursor; sometimes one too far (a cursor gap).
        n = delta(m.last + Enum.random([1, 1, 1, 2]), "s")

        if n["cursor"] == m.last + 1 do
          check_append(r, m, n, n, ctx)
        else
          assert {:error, %Error{code: :cursor_gap}, ^r} = Replay.append(r, n), ctx
          {r, m}
        end

      :since ->
        cursor = random_cursor(m)

        actual =
          case Replay.since(r, cursor) do
            {:ok, page} -> {:ok, page}
            {:error, %Error{code: code}} -> {:error, code}
          end

        assert actual == model_since(m, cursor), "#{ctx}, since(#{cursor})"
        {r, m}
    end
  end

  defp check_append(r, m, n, sequenced, ctx) do
    case model_append(m, sequenced) do
      {:ok, expected, m} ->
        assert {:ok, ^expected, r} = Replay.append(r, n), ctx
        {r, m}

      {:error, code, m} ->
        assert {:error, %Error{code: ^code}, ^r} = Replay.append(r, n), ctx
        {r, m}
    end
  end

  # Random cursors, biased to the retention edge and to chunk boundaries.
  defp random_cursor(m) do
    first = model_first(m)
    boundary = 128 * Enum.random(0..div(m.last, 128)) + Enum.random([-1, 0, 1])

    Enum.random([
      Enum.random(0..(m.last + 1)),
      first - 1,
      first - 2,
      m.last,
      m.last - 128,
      boundary
    ])
    |> max(0)
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
