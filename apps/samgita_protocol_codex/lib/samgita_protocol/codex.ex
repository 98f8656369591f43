defmodule SamgitaProtocol.Codex do
  @moduledoc """
  Optional, limited translation to the pinned Codex 0.163.0 app-server schemas (not yet built; tracked as its own issue).

  This package is an empty, standalone Mix project for now so the repository
  layout, CI and checks are in place; it exposes no API yet.
  """
end
