// llama-quantize's --tensor-type NAME=TYPE (tools/quantize/quantize.cpp parse_tensor_type,
// src/llama-quant.cpp llama_tensor_get_type, ngxson/llama.cpp at the commit named in
// kernels/ggml/blocks.h): NAME is a regular expression (std::regex, ECMAScript), searched
// in each tensor's GGUF name; the first option whose expression matches gives the type.
// The rest of the core is built without exceptions; std::regex reports a bad expression
// by throwing, so the expressions are compiled and searched in tensor_type_patterns.cpp
// alone, which is built with them and turns them into errors.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/error.h"

namespace amn {

class TensorTypePatterns {
 public:
  // One "NAME=TYPE" per option, in the order given. The name is lowercased and the type is
  // kept as written (the caller checks it names a ggml type), as llama-quantize does.
  // Errors (invalid_argument): no '=', an empty name or type, an expression std::regex refuses.
  static Result<TensorTypePatterns> parse(std::span<const std::string> options, std::string_view option_name);
  TensorTypePatterns() = default;

  bool empty() const { return !impl_; }
  size_t size() const;
  std::string_view type_name(size_t i) const;  // the TYPE of option i, as written
  // The index of the first option whose expression matches `tensor_name`; nullopt for none.
  // An error when the regex engine gives up (std::regex_error while searching).
  Result<std::optional<size_t>> match(std::string_view tensor_name) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace amn
