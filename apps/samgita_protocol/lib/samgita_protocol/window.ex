defmodule SamgitaProtocol.Window do
  @moduledoc false
  # A bounded first-in-first-out map: inserting into a full window evicts the
  # oldest key, and keys can be deleted. Used for the client's correlated
  # stream/resume results waiting for receive_replay/2 (consumed ones are
  # deleted); request identities use `SamgitaProtocol.RecentIds`.

  @type t :: %__MODULE__{map: map(), queue: :queue.queue(), max: pos_integer()}
  defstruct map: %{}, queue: :queue.new(), max: 128

  @spec new(pos_integer()) :: t()
  def new(max), do: %__MODULE__{max: max}

  @spec fetch(t(), term()) :: {:ok, term()} | :error
  def fetch(%__MODULE__{map: map}, key), do: Map.fetch(map, key)

  @spec member?(t(), term()) :: boolean()
  def member?(%__MODULE__{map: map}, key), do: is_map_key(map, key)

  @spec size(t()) :: non_neg_integer()
  def size(%__MODULE__{map: map}), do: map_size(map)

  @spec put(t(), term(), term()) :: t()
  def put(%__MODULE__{map: map} = w, key, value) when is_map_key(map, key),
    do: %{w | map: Map.put(map, key, value)}

  def put(%__MODULE__{map: map, queue: queue, max: max} = w, key, value) do
    {map, queue} =
      if map_size(map) >= max do
        {{:value, oldest}, queue} = :queue.out(queue)
        {Map.delete(map, oldest), queue}
      else
        {map, queue}
      end

    %{w | map: Map.put(map, key, value), queue: :queue.in(key, queue)}
  end

  # Forgets one key (a linear queue removal: windows are small).
  @spec delete(t(), term()) :: t()
  def delete(%__MODULE__{map: map, queue: queue} = w, key) when is_map_key(map, key),
    do: %{w | map: Map.delete(map, key), queue: :queue.delete(key, queue)}

  def delete(w, _key), do: w

  @spec clear(t()) :: t()
  def clear(%__MODULE__{max: max}), do: new(max)
end
