[
  inputs: ["{mix,.formatter}.exs", "{config,lib,test,bench,examples}/**/*.{ex,exs}"]
]
