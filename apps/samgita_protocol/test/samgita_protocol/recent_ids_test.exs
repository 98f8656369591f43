defmodule SamgitaProtocol.RecentIdsTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.RecentIds

  test "remembers exactly the newest max insertions" do
    ids = Enum.reduce(1..10, RecentIds.new(4), &RecentIds.put(&2, &1, {:v, &1}))
    assert for(k <- 1..10, RecentIds.member?(ids, k), do: k) == [7, 8, 9, 10]
    assert RecentIds.fetch(ids, 9) == {:ok, {:v, 9}}
    assert RecentIds.fetch(ids, 6) == :error
    assert RecentIds.size(ids) == 4
  end

  test "putting a remembered key replaces its value and keeps its age" do
    ids = Enum.reduce(1..3, RecentIds.new(3), &RecentIds.put(&2, &1, :old))
    # 1 is in the full generation now; updating it does not make it newer.
    ids = RecentIds.put(ids, 1, :new)
    assert RecentIds.fetch(ids, 1) == {:ok, :new}
    ids = RecentIds.put(ids, 4, :old)
    assert RecentIds.fetch(ids, 1) == :error
    assert RecentIds.fetch(ids, 2) == {:ok, :old}
  end

  test "a forgotten key put again is a new insertion" do
    ids = Enum.reduce([1, 2, 3, 1], RecentIds.new(2), &RecentIds.put(&2, &1, &1))
    assert for(k <- 1..3, RecentIds.member?(ids, k), do: k) == [1, 3]
  end

  # Against a plain list model of a FIFO window, on seeded random keys and
  # sizes, including re-puts of remembered and forgotten keys.
  test "agrees with a FIFO model on random puts" do
    :rand.seed(:exsss, {7, 7, 7})

    for _run <- 1..200 do
      max = :rand.uniform(20)

      {ids, model} =
        Enum.reduce(1..300, {RecentIds.new(max), []}, fn _, {ids, model} ->
          key = :rand.uniform(3 * max)
          value = :rand.uniform(1000)

          model =
            if List.keymember?(model, key, 0),
              do: List.keyreplace(model, key, 0, {key, value}),
              else: Enum.take([{key, value} | model], max)

          ids = RecentIds.put(ids, key, value)

          for k <- 1..(3 * max) do
            expected =
              with {^k, v} <- List.keyfind(model, k, 0), do: {:ok, v}, else: (_ -> :error)

            assert RecentIds.fetch(ids, k) == expected
          end

          assert map_size(ids.current) < max and map_size(ids.previous) <= max
          {ids, model}
        end)

      assert RecentIds.size(ids) == length(model)
    end
  end

  test "add/3 of keys that are not remembered behaves as put/3" do
    keys = Enum.shuffle(1..50)
    added = Enum.reduce(keys, RecentIds.new(7), &RecentIds.add(&2, &1, -&1))
    put = Enum.reduce(keys, RecentIds.new(7), &RecentIds.put(&2, &1, -&1))

    assert for(k <- 1..50, do: RecentIds.fetch(added, k)) ==
             for(k <- 1..50, do: RecentIds.fetch(put, k))

    assert map_size(added.current) < 7 and map_size(added.previous) <= 7
  end

  test "clear forgets everything" do
    ids = RecentIds.put(RecentIds.new(2), :a, 1) |> RecentIds.clear()
    assert RecentIds.fetch(ids, :a) == :error
  end
end
