defmodule SamgitaProtocol.Schema.Document.Ordered do
  @moduledoc """
  A JSON object whose keys keep the given order when encoded, so the schema
  artifact is byte-stable (Erlang maps of more than 32 keys have no defined
  order).
  """
  @moduledoc since: "0.1.0"

  @type t :: %__MODULE__{pairs: [{String.t(), term()}]}
  defstruct pairs: []

  defimpl JSON.Encoder do
    def encode(%{pairs: pairs}, encoder) do
      body =
        pairs
        |> Enum.map(fn {k, v} -> [:json.encode_binary(k), ?:, encoder.(v, encoder)] end)
        |> Enum.intersperse(?,)

      [?{, body, ?}]
    end
  end
end
