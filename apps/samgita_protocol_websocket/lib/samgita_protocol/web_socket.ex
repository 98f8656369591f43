defmodule SamgitaProtocol.WebSocket do
  @moduledoc """
  Documentation for `SamgitaProtocol.WebSocket`.
  """

  @doc """
  Hello world.

  ## Examples

      iex> SamgitaProtocol.WebSocket.hello()
      :world

  """
  def hello do
    :world
  end
end
