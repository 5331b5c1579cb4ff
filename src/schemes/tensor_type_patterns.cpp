// Built with -fexceptions (CMakeLists.txt): std::regex throws; nothing else here does.
#include "schemes/tensor_type_patterns.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <utility>
#include <vector>

namespace amn {

namespace {

// std::regex_error's code in words: what() differs between libstdc++ (native) and libc++
// (WASM), and both CLIs print the same line.
const char* regex_error_text(std::regex_constants::error_type code) {
  namespace rc = std::regex_constants;
  if (code == rc::error_collate) return "an invalid collating element name";
  if (code == rc::error_ctype) return "an invalid character class name";
  if (code == rc::error_escape) return "an invalid escape or a trailing backslash";
  if (code == rc::error_backref) return "an invalid back reference";
  if (code == rc::error_brack) return "mismatched [ and ]";
  if (code == rc::error_paren) return "mismatched ( and )";
  if (code == rc::error_brace) return "mismatched { and }";
  if (code == rc::error_badbrace) return "an invalid range in { }";
  if (code == rc::error_range) return "an invalid character range";
  if (code == rc::error_space) return "out of memory";
  if (code == rc::error_badrepeat) return "a repeat (*?+{) with nothing before it";
  if (code == rc::error_complexity) return "too complex to match";
  if (code == rc::error_stack) return "too deep to match";
  return "refused by std::regex";
}

}  // namespace

struct TensorTypePatterns::Impl {
  std::vector<std::pair<std::regex, std::string>> patterns;
};

Result<TensorTypePatterns> TensorTypePatterns::parse(std::span<const std::string> options, std::string_view option_name) {
  TensorTypePatterns out;
  if (options.empty()) return out;
  auto impl = std::make_shared<Impl>();
  const std::string opt(option_name);
  for (const std::string& o : options) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) return make_error(ErrorCode::invalid_argument, opt + ": '" + o + "' is not NAME=TYPE");
    if (eq == 0) return make_error(ErrorCode::invalid_argument, opt + ": '" + o + "' has no tensor name before '='");
    if (eq + 1 == o.size()) return make_error(ErrorCode::invalid_argument, opt + ": '" + o + "' has no type after '='");
    std::string name = o.substr(0, eq);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    try {
      impl->patterns.emplace_back(std::regex(name), o.substr(eq + 1));
    } catch (const std::regex_error& e) {
      return make_error(ErrorCode::invalid_argument, opt + ": '" + name + "' is not a regular expression (" + regex_error_text(e.code()) + ")");
    }
  }
  out.impl_ = std::move(impl);
  return out;
}

size_t TensorTypePatterns::size() const { return impl_ ? impl_->patterns.size() : 0; }

std::string_view TensorTypePatterns::type_name(size_t i) const { return impl_->patterns.at(i).second; }

Result<std::optional<size_t>> TensorTypePatterns::match(std::string_view tensor_name) const {
  if (!impl_) return std::optional<size_t>();
  const std::string name(tensor_name);
  for (size_t i = 0; i < impl_->patterns.size(); ++i) {
    try {
      if (std::regex_search(name, impl_->patterns[i].first)) return std::optional<size_t>(i);
    } catch (const std::regex_error& e) {
      return make_error(ErrorCode::invalid_argument, "tensor type pattern " + std::to_string(i + 1) + " on '" + name + "': " + regex_error_text(e.code()));
    }
  }
  return std::optional<size_t>();
}

}  // namespace amn
