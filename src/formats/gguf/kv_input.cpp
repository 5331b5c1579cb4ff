#include "formats/gguf/kv_input.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include <simdjson.h>

#include "core/json_syntax.h"
#include "core/limits.h"
#include "core/text.h"
#include "formats/gguf/write.h"

namespace amn {
namespace {

namespace od = simdjson::ondemand;

// One scalar as given: the text of a --gguf-kv argument (typed by the target, or by
// inference), or a JSON string, number (its text, so FLOAT32 is rounded once, from the
// decimal), boolean or null.
struct Token {
  enum class Kind { text, string, number, boolean, null } kind = Kind::text;
  std::string text;
  bool b = false;
};

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number(std::string_view s, bool& integer) {
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') ++i;
  if (i == n || !is_digit(s[i])) return false;
  if (s[i] == '0') ++i;
  else while (i < n && is_digit(s[i])) ++i;
  integer = true;
  if (i < n && s[i] == '.') {
    integer = false;
    if (++i == n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) ++i;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    integer = false;
    if (++i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (i == n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) ++i;
  }
  return i == n;
}

bool is_unsigned(GgufType t) {
  return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 || t == GgufType::UINT64;
}
bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}
unsigned int_bits(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: return 8;
    case GgufType::UINT16: case GgufType::INT16: return 16;
    case GgufType::UINT32: case GgufType::INT32: return 32;
    default: return 64;
  }
}

// A whole-text integer: an optional '-' and digits (no '+', no spaces).
struct Integer {
  bool negative = false;
  uint64_t u = 0;  // when !negative
  int64_t i = 0;   // when negative
};

Result<Integer> parse_integer(std::string_view s) {
  Integer v;
  v.negative = !s.empty() && s[0] == '-';
  const char* end = s.data() + s.size();
  std::from_chars_result r;
  if (v.negative) r = std::from_chars(s.data(), end, v.i);
  else r = std::from_chars(s.data(), end, v.u);
  if (r.ec == std::errc::result_out_of_range) {
    return make_error(ErrorCode::invalid_argument, std::string(s) + " is out of range for any integer type");
  }
  if (r.ec != std::errc() || r.ptr != end || s.empty()) {
    return make_error(ErrorCode::invalid_argument, quote(s) + " is not an integer");
  }
  return v;
}

bool is_infinity_text(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  const std::string u = upper(s);
  return u == "INF" || u == "INFINITY";
}

Result<double> parse_float(GgufType t, std::string_view s) {
  const std::string text(s);
  if (text.empty() || text[0] == ' ' || text[0] == '\t' || text[0] == '\n' || text[0] == '\r') {
    return make_error(ErrorCode::invalid_argument, quote(s) + " is not a number");
  }
  char* end = nullptr;
  errno = 0;
  const double v = t == GgufType::FLOAT32 ? static_cast<double>(std::strtof(text.c_str(), &end))
                                          : std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return make_error(ErrorCode::invalid_argument, quote(s) + " is not a number");
  if (std::isinf(v) && !is_infinity_text(s)) {
    return make_error(ErrorCode::invalid_argument, text + " is out of range for " + std::string(gguf_type_name(t)));
  }
  return v;
}

// A scalar of type t from a token. Messages say what is wrong; the caller says where.
Result<GgufValue> scalar_as(GgufType t, const Token& tok) {
  using K = Token::Kind;
  const std::string type(gguf_type_name(t));
  if (tok.kind == K::null) {
    return make_error(ErrorCode::invalid_argument,
                      "null is not a " + type + " (NaN and infinities are written as null in the info JSON: give "
                      "\"nan\", \"inf\" or \"-inf\")");
  }
  auto wrong = [&](const char* expected) {
    const std::string got = tok.kind == K::string ? "the string " + quote(tok.text)
                            : tok.kind == K::boolean ? std::string(tok.b ? "true" : "false")
                                                     : quote(tok.text);
    return make_error(ErrorCode::invalid_argument, got + " is not " + expected + " (type " + type + ")");
  };
  if (t == GgufType::STRING) {
    if (tok.kind != K::text && tok.kind != K::string) return wrong("a string");
    if (!valid_utf8(tok.text)) {
      return make_error(ErrorCode::invalid_argument, "the string is not valid UTF-8");
    }
    if (tok.text.size() > kHardMaxGgufString) {
      return make_error(ErrorCode::limit, "the string is " + std::to_string(tok.text.size()) +
                                              " bytes long, more than the limit of " + std::to_string(kHardMaxGgufString));
    }
    return gguf_value_string(tok.text);
  }
  if (t == GgufType::BOOL) {
    if (tok.kind == K::boolean) return gguf_value_bool(tok.b);
    if (tok.kind == K::text && (tok.text == "true" || tok.text == "false")) return gguf_value_bool(tok.text == "true");
    return wrong("true or false");
  }
  if (t == GgufType::FLOAT32 || t == GgufType::FLOAT64) {
    if (tok.kind == K::string && !(is_infinity_text(tok.text) || upper(tok.text) == "NAN" || upper(tok.text) == "-NAN")) {
      return wrong("a number");
    }
    bool integer = false;
    if (tok.kind == K::boolean || (tok.kind == K::number && !json_number(tok.text, integer))) return wrong("a number");
    AMN_ASSIGN(double v, parse_float(t, tok.text));
    return gguf_value_float(t, v);
  }
  if (is_unsigned(t) || is_signed(t)) {
    bool integer = false;
    if (tok.kind == K::string || tok.kind == K::boolean) return wrong("an integer");
    if (tok.kind == K::number && (!json_number(tok.text, integer) || !integer)) return wrong("an integer");
    AMN_ASSIGN(Integer n, parse_integer(tok.text));
    const unsigned bits = int_bits(t);
    const bool fits = is_unsigned(t) ? !n.negative && (bits == 64 || n.u >> bits == 0)
                      : n.negative   ? bits == 64 || n.i >= -(int64_t{1} << (bits - 1))
                                     : n.u <= uint64_t((bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1));
    if (!fits) return make_error(ErrorCode::invalid_argument, tok.text + " is out of range for " + type);
    if (is_unsigned(t)) return gguf_value_uint(t, n.u);
    return gguf_value_int(t, n.negative ? n.i : static_cast<int64_t>(n.u));
  }
  return make_error(ErrorCode::internal, "no scalar conversion to " + type);
}

Error null_untyped() {
  return make_error(ErrorCode::invalid_argument,
                    "null has no GGUF type (NaN and infinities are written as null in the info JSON: give "
                    "{\"type\": \"FLOAT32\", \"value\": \"nan\"})");
}

// The type a number takes untyped: FLOAT32 with a fraction or an exponent, else the
// narrowest of UINT32 / INT32 / UINT64 / INT64.
Result<GgufType> infer_number(std::string_view text) {
  bool integer = false;
  if (!json_number(text, integer)) return make_error(ErrorCode::parse, quote(text) + " is not a JSON number");
  if (!integer) return GgufType::FLOAT32;
  AMN_ASSIGN(Integer n, parse_integer(text));
  if (n.negative) return n.i >= INT32_MIN ? GgufType::INT32 : GgufType::INT64;
  return n.u <= UINT32_MAX ? GgufType::UINT32 : GgufType::UINT64;
}

Result<GgufType> infer_scalar(const Token& tok) {
  using K = Token::Kind;
  switch (tok.kind) {
    case K::string: return GgufType::STRING;
    case K::boolean: return GgufType::BOOL;
    case K::number: return infer_number(tok.text);
    case K::null: return null_untyped();
    case K::text: {
      bool integer = false;
      if (tok.text == "true" || tok.text == "false") return GgufType::BOOL;
      if (json_number(tok.text, integer)) return infer_number(tok.text);
      return GgufType::STRING;
    }
  }
  return GgufType::STRING;
}

// The element type of an untyped array of scalars (see kv_input.h).
Result<GgufType> infer_elements(const std::vector<Token>& toks) {
  using K = Token::Kind;
  bool strings = false, bools = false, numbers = false, floats = false, negative = false;
  uint64_t max_u = 0;
  int64_t min_i = 0;
  for (const auto& t : toks) {
    if (t.kind == K::null) return null_untyped();
    strings |= t.kind == K::string;
    bools |= t.kind == K::boolean;
    if (t.kind != K::number) continue;
    numbers = true;
    AMN_ASSIGN(GgufType type, infer_number(t.text));
    if (type == GgufType::FLOAT32) {
      floats = true;
      continue;
    }
    AMN_ASSIGN(Integer n, parse_integer(t.text));
    if (n.negative) {
      negative = true;
      min_i = std::min(min_i, n.i);
    } else {
      max_u = std::max(max_u, n.u);
    }
  }
  if (strings + bools + numbers > 1) {
    return make_error(ErrorCode::invalid_argument,
                      "the elements mix strings, booleans and numbers: give the type (ARRAY[TYPE])");
  }
  if (strings) return GgufType::STRING;
  if (bools) return GgufType::BOOL;
  if (floats) return GgufType::FLOAT32;
  if (!negative) return max_u <= UINT32_MAX ? GgufType::UINT32 : GgufType::UINT64;
  if (max_u > uint64_t(INT64_MAX)) {
    return make_error(ErrorCode::invalid_argument, "the elements mix negative integers and integers above 2^63-1");
  }
  return min_i >= INT32_MIN && max_u <= uint64_t(INT32_MAX) ? GgufType::INT32 : GgufType::INT64;
}

// "UINT32", "ARRAY", "ARRAY[STRING]", "ARRAY[ARRAY[INT32]]" (any case) as the chain of
// types from the outermost: {ARRAY, ARRAY, INT32}. A chain ending in ARRAY leaves the
// innermost element type to inference.
Result<std::vector<GgufType>> parse_type_chain(std::string_view text) {
  std::vector<GgufType> chain;
  std::string_view s = text;
  while (true) {
    const std::string u = upper(s);
    if (u == "ARRAY") {
      chain.push_back(GgufType::ARRAY);
      break;
    }
    if (u.size() > 7 && u.compare(0, 6, "ARRAY[") == 0 && u.back() == ']') {
      chain.push_back(GgufType::ARRAY);
      s = s.substr(6, s.size() - 7);
      continue;
    }
    bool found = false;
    for (uint32_t t = 0; t < kGgufTypeCount && !found; ++t) {
      if (static_cast<GgufType>(t) != GgufType::ARRAY && gguf_type_name(static_cast<GgufType>(t)) == u) {
        chain.push_back(static_cast<GgufType>(t));
        found = true;
      }
    }
    if (!found) {
      std::string names;
      for (uint32_t t = 0; t < kGgufTypeCount; ++t) names += (t ? ", " : "") + std::string(gguf_type_name(static_cast<GgufType>(t)));
      return make_error(ErrorCode::invalid_argument,
                        "unknown type " + quote(text) + " (types: " + names + ", ARRAY[TYPE])");
    }
    break;
  }
  if (chain.size() - (chain.back() == GgufType::ARRAY ? 0 : 1) > kHardMaxGgufArrayDepth) {
    return make_error(ErrorCode::limit, "type " + quote(text) + " nests arrays deeper than " +
                                            std::to_string(kHardMaxGgufArrayDepth) + " levels");
  }
  return chain;
}

// Texts are checked by find_json_syntax_error before simdjson reads them (they are
// command-line arguments or a small file: cheap), so a syntax fault is named with its
// byte; what remains here are faults the checker does not model (numbers out of range).
Error json_error(simdjson::error_code e) {
  return make_error(ErrorCode::parse, std::string("malformed JSON: ") + json_error_words(e));
}

Status check_json_syntax(std::string_view text) {
  const JsonSyntaxError fault = find_json_syntax_error(text);
  if (!fault.found) return {};
  return make_error(ErrorCode::parse, "malformed JSON: " + fault.what + " at byte " + std::to_string(fault.offset));
}

#define AMN_JSON(expr)                      \
  do {                                      \
    if (auto amn_json_err_ = (expr)) return json_error(amn_json_err_); \
  } while (0)

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Converts JSON values to GgufValues; remembers the element path for messages.
class JsonValues {
 public:
  Status value(od::value v, std::span<const GgufType> chain, uint32_t depth, GgufValue& out) {
    if (!chain.empty() && chain[0] == GgufType::ARRAY) {
      od::array a;
      if (v.get_array().get(a)) return here("expected a JSON array (type ARRAY)", ErrorCode::invalid_argument);
      return array(a, chain, depth + 1, out);
    }
    od::json_type type;
    AMN_JSON(v.type().get(type));
    if (type == od::json_type::array && chain.empty()) {
      od::array a;
      AMN_JSON(v.get_array().get(a));
      static constexpr GgufType kArray[] = {GgufType::ARRAY};
      return array(a, kArray, depth + 1, out);
    }
    if (type == od::json_type::array || type == od::json_type::object) {
      return here(type == od::json_type::object ? "an object is not a value (only a top-level {\"type\", \"value\"})"
                                                : "expected a scalar, found an array",
                  ErrorCode::invalid_argument);
    }
    AMN_ASSIGN(Token tok, token(v));
    Result<GgufType> t = chain.empty() ? infer_scalar(tok) : Result<GgufType>(chain[0]);
    if (!t) return here(std::move(t).error());
    auto r = scalar_as(*t, tok);
    if (!r) return here(std::move(r).error());
    out = std::move(r).value();
    return {};
  }

  // chain[0] is ARRAY; chain[1..] the element spec (empty: inferred). depth counts the
  // arrays open, this one included.
  Status array(od::array a, std::span<const GgufType> chain, uint32_t depth, GgufValue& out) {
    if (depth > kHardMaxGgufArrayDepth) {
      return here("arrays nest deeper than " + std::to_string(kHardMaxGgufArrayDepth) + " levels", ErrorCode::limit);
    }
    const std::span<const GgufType> elem = chain.subspan(1);
    std::vector<Token> toks;  // untyped scalars, typed once all are seen
    GgufValue arr = gguf_value_array(elem.empty() ? GgufType::UINT8 : elem[0]);
    path_.push_back(0);
    for (auto item : a) {
      od::value v;
      AMN_JSON(item.get(v));
      if (arr.count + toks.size() >= kHardMaxGgufArrayLength) {
        return here("more than " + std::to_string(kHardMaxGgufArrayLength) + " elements", ErrorCode::limit);
      }
      od::json_type type;
      AMN_JSON(v.type().get(type));
      const bool nested = elem.empty() ? type == od::json_type::array : elem[0] == GgufType::ARRAY;
      if (nested) {
        if (!toks.empty()) return here("the elements mix arrays and scalars", ErrorCode::invalid_argument);
        arr.elem_type = GgufType::ARRAY;
        GgufValue inner;
        static constexpr GgufType kArray[] = {GgufType::ARRAY};
        AMN_TRY(value(v, elem.empty() ? std::span<const GgufType>(kArray) : elem, depth, inner));
        arr.items.push_back(std::move(inner));
        ++arr.count;
      } else if (elem.empty()) {
        if (arr.count) return here("the elements mix arrays and scalars", ErrorCode::invalid_argument);
        AMN_ASSIGN(Token tok, token(v));
        toks.push_back(std::move(tok));
      } else {
        GgufValue e;
        AMN_TRY(value(v, elem, depth, e));
        (void)gguf_array_append(arr, e);
      }
      ++path_.back();
    }
    path_.pop_back();
    if (elem.empty() && arr.count == 0) {
      if (toks.empty()) return here("an empty array needs its element type (ARRAY[TYPE])", ErrorCode::invalid_argument);
      auto t = infer_elements(toks);
      if (!t) return here(std::move(t).error());
      arr.elem_type = *t;
      path_.push_back(0);
      for (const auto& tok : toks) {
        auto e = scalar_as(*t, tok);
        if (!e) return here(std::move(e).error());
        (void)gguf_array_append(arr, *e);
        ++path_.back();
      }
      path_.pop_back();
    }
    out = std::move(arr);
    return {};
  }

 private:
  Result<Token> token(od::value& v) {
    od::json_type type;
    AMN_JSON(v.type().get(type));
    Token tok;
    switch (type) {
      case od::json_type::number:
        tok.kind = Token::Kind::number;
        tok.text = std::string(trim(v.raw_json_token()));
        break;
      case od::json_type::string: {
        std::string_view s;
        AMN_JSON(v.get_string().get(s));
        tok.kind = Token::Kind::string;
        tok.text = std::string(s);
        break;
      }
      case od::json_type::boolean:
        tok.kind = Token::Kind::boolean;
        AMN_JSON(v.get_bool().get(tok.b));
        break;
      case od::json_type::null: {
        bool is_null = false;
        AMN_JSON(v.is_null().get(is_null));
        if (!is_null) return json_error(simdjson::N_ATOM_ERROR);
        tok.kind = Token::Kind::null;
        break;
      }
      default: return here("expected a scalar", ErrorCode::invalid_argument);
    }
    return tok;
  }

  // An error at the current element path ("at [3][0]: ...").
  Error here(Error e) {
    if (path_.empty()) return e;
    std::string where = "at ";
    for (uint64_t k : path_) {
      where += '[';
      where += std::to_string(k);
      where += ']';
    }
    e.message = where + ": " + e.message;
    return e;
  }
  Error here(std::string message, ErrorCode code) { return here(make_error(code, std::move(message))); }

  std::vector<uint64_t> path_;
};

Error with_context(Error e, const std::string& context) {
  e.message = context + e.message;
  return e;
}

Status check_key(std::string_view key) {
  if (key.empty()) return make_error(ErrorCode::invalid_argument, "the key is empty");
  if (key.size() > kHardMaxNameBytes) {
    return make_error(ErrorCode::limit, "the key is " + std::to_string(key.size()) +
                                            " bytes long, more than the limit of " + std::to_string(kHardMaxNameBytes));
  }
  if (!valid_utf8(key)) {
    return make_error(ErrorCode::invalid_argument, "the key is not valid UTF-8");
  }
  return {};
}

Result<GgufKv> parse_arg(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos) {
    return make_error(ErrorCode::invalid_argument, "expected key=value or key:TYPE=value");
  }
  const std::string_view left = arg.substr(0, eq);
  const std::string_view text = arg.substr(eq + 1);
  const size_t colon = left.rfind(':');
  const std::string_view key = left.substr(0, colon);
  AMN_TRY(check_key(key));
  Token tok{Token::Kind::text, std::string(text), false};
  if (colon == std::string_view::npos) {
    AMN_ASSIGN(GgufType type, infer_scalar(tok));
    AMN_ASSIGN(GgufValue v, scalar_as(type, tok));
    return GgufKv{std::string(key), std::move(v)};
  }
  AMN_ASSIGN(std::vector<GgufType> chain, parse_type_chain(left.substr(colon + 1)));
  if (chain[0] != GgufType::ARRAY) {
    AMN_ASSIGN(GgufValue v, scalar_as(chain[0], tok));
    return GgufKv{std::string(key), std::move(v)};
  }
  AMN_TRY(check_json_syntax(text));
  const simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  od::array a;
  AMN_JSON(parser.iterate(padded).get(doc));
  if (auto e = doc.get_array().get(a)) {
    if (e != simdjson::INCORRECT_TYPE) return json_error(e);
    return make_error(ErrorCode::invalid_argument, "an ARRAY value must be a JSON array");
  }
  GgufValue v;
  JsonValues values;
  AMN_TRY(values.array(a, chain, 1, v));
  if (!doc.at_end()) return make_error(ErrorCode::parse, "malformed JSON (text after the array)");
  return GgufKv{std::string(key), std::move(v)};
}

}  // namespace

Result<GgufKv> parse_gguf_kv_arg(std::string_view arg) {
  auto r = parse_arg(arg);
  if (!r) {
    const size_t end = arg.find('=');
    const std::string_view name = arg.substr(0, end == std::string_view::npos ? arg.size() : end);
    return with_context(std::move(r).error(), "gguf kv " + quote(name) + ": ");
  }
  return r;
}

Result<std::vector<GgufKv>> parse_gguf_kv_json(std::string_view json) {
  const std::string context = "gguf metadata: ";
  if (auto s = check_json_syntax(json); !s) return with_context(std::move(s).error(), context);
  const simdjson::padded_string padded(json);
  od::parser parser;
  od::document doc;
  od::object root;
  if (auto e = parser.iterate(padded).get(doc)) return with_context(json_error(e), context);
  if (auto e = doc.get_object().get(root)) {
    if (e != simdjson::INCORRECT_TYPE) return with_context(json_error(e), context);
    return make_error(ErrorCode::invalid_argument, context + "expected a JSON object of KVs ({\"key\": value, ...})");
  }
  std::vector<GgufKv> out;
  std::unordered_set<std::string> seen;
  for (auto field : root) {
    std::string_view key_view;
    if (auto e = field.unescaped_key().get(key_view)) return with_context(json_error(e), context);
    std::string key(key_view);
    const std::string where = context + "key " + quote(key) + ": ";
    if (auto s = check_key(key); !s) return with_context(std::move(s).error(), where);
    if (!seen.insert(key).second) return make_error(ErrorCode::invalid_argument, where + "the key appears twice");
    if (out.size() >= kHardMaxGgufKv) {
      return make_error(ErrorCode::limit, context + "more than " + std::to_string(kHardMaxGgufKv) + " KVs");
    }
    od::value v;
    od::json_type type;
    if (auto e = field.value().get(v)) return with_context(json_error(e), where);
    if (auto e = v.type().get(type)) return with_context(json_error(e), where);
    GgufValue value;
    JsonValues values;
    if (type != od::json_type::object) {
      if (auto s = values.value(v, {}, 0, value); !s) return with_context(std::move(s).error(), where);
      out.emplace_back(std::move(key), std::move(value));
      continue;
    }
    // {"type": "UINT32", "value": 4096}, members in either order, nothing else.
    od::object typed;
    size_t members = 0;
    std::string_view type_name;
    od::value inner;
    const bool shaped = !v.get_object().get(typed) && !typed.count_fields().get(members) && members == 2 &&
                        !typed.find_field_unordered("type").get_string().get(type_name) &&
                        !typed.find_field_unordered("value").get(inner);
    if (!shaped) {
      return make_error(ErrorCode::invalid_argument,
                        where + "an object value must be {\"type\": \"TYPE\", \"value\": ...} and nothing else");
    }
    auto chain = parse_type_chain(type_name);
    if (!chain) return with_context(std::move(chain).error(), where);
    if (auto s = values.value(inner, *chain, 0, value); !s) return with_context(std::move(s).error(), where);
    out.emplace_back(std::move(key), std::move(value));
  }
  if (!doc.at_end()) return make_error(ErrorCode::parse, context + "malformed JSON (text after the object)");
  return out;
}

void merge_gguf_kv(std::vector<GgufKv>& base, std::vector<GgufKv> overrides) {
  std::unordered_map<std::string, size_t> index;
  for (size_t k = 0; k < base.size(); ++k) index.emplace(base[k].first, k);
  for (auto& kv : overrides) {
    auto [it, added] = index.emplace(kv.first, base.size());
    if (added) base.push_back(std::move(kv));
    else base[it->second].second = std::move(kv.second);
  }
}

}  // namespace amn
