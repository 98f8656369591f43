defmodule SamgitaProtocol.RecentIds do
  @moduledoc false
  # The last `max` request ids put, each with a value: the terminal-identity
  # window of an `Outbox` (completed or expired ids) and the Server's seen
  # requests. A lookup finds exactly the keys among the newest `max`
  # insertions (putting a key that is still remembered only replaces its
  # value); older ones are forgotten.
  #
  # This runs on every request of a connection, so it avoids a delete per
  # insert: keys go into `current` with their insertion number; once
  # `current` holds `max` keys it becomes `previous` (the old `previous`, all
  # of whose keys are older than the newest `max`, is dropped whole) and a
  # new `current` starts. An entry of `previous` is remembered while fewer
  # than `max` insertions came after it. So one put is one map insert, where
  # a map plus an eviction queue took an insert, a delete and two queue
  # operations (about 0.3 µs of a 8.5 µs round trip at 128 entries). Memory
  # holds at most 2 × `max` entries; lookups never see more than `max`.
  #
  # Nothing is ever deleted from it (use `SamgitaProtocol.Window` for that).

  @type t :: %__MODULE__{
          current: %{term() => {pos_integer(), term()}},
          previous: %{term() => {pos_integer(), term()}},
          count: non_neg_integer(),
          max: pos_integer()
        }
  defstruct current: %{}, previous: %{}, count: 0, max: 128

  @spec new(pos_integer()) :: t()
  def new(max) when is_integer(max) and max > 0, do: %__MODULE__{max: max}

  @spec fetch(t(), term()) :: {:ok, term()} | :error
  def fetch(%__MODULE__{current: current, previous: previous, count: count, max: max}, key) do
    case current do
      %{^key => {_n, value}} ->
        {:ok, value}

      %{} ->
        case previous do
          %{^key => {n, value}} when n > count - max -> {:ok, value}
          %{} -> :error
        end
    end
  end

  @spec member?(t(), term()) :: boolean()
  def member?(ids, key), do: fetch(ids, key) != :error

  @doc false
  # How many keys a lookup can find (at most max).
  @spec size(t()) :: non_neg_integer()
  def size(%__MODULE__{count: count, max: max}), do: min(count, max)

  @spec put(t(), term(), term()) :: t()
  def put(
        %__MODULE__{current: current, previous: previous, count: count, max: max} = ids,
        key,
        value
      ) do
    case current do
      %{^key => {n, _old}} ->
        %{ids | current: Map.put(current, key, {n, value})}

      %{} ->
        case previous do
          %{^key => {n, _old}} when n > count - max ->
            %{ids | previous: Map.put(previous, key, {n, value})}

          %{} ->
            add(ids, key, value)
        end
    end
  end

  @doc false
  # put/3 for a key the caller knows is not remembered (its own check just
  # said so): one map insert, without looking the key up first.
  @spec add(t(), term(), term()) :: t()
  def add(%__MODULE__{current: current, count: count, max: max} = ids, key, value) do
    count = count + 1
    current = Map.put(current, key, {count, value})

    if map_size(current) == max,
      do: %{ids | current: %{}, previous: current, count: count},
      else: %{ids | current: current, count: count}
  end

  @spec clear(t()) :: t()
  def clear(%__MODULE__{max: max}), do: new(max)
end
