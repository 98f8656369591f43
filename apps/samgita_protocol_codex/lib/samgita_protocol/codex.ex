defmodule SamgitaProtocol.Codex do
  @moduledoc """
  Documentation for `SamgitaProtocol.Codex`.
  """

  @doc """
  Hello world.

  ## Examples

      iex> SamgitaProtocol.Codex.hello()
      :world

  """
  def hello do
    :world
  end
end
