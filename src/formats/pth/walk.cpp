#include "formats/pth/walk.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>

#include "core/checked.h"
#include "core/json.h"
#include "core/text.h"

namespace amn::pth {
namespace {

using pickle::Kind;
using pickle::kNoValue;
using pickle::Pickle;
using pickle::Value;

// Leaf values are summaries for people: a few levels and items, short strings.
constexpr int kJsonDepth = 6;
constexpr size_t kJsonItems = 32;
constexpr size_t kJsonString = 256;

Error parse_error(const std::string& what) { return make_error(ErrorCode::parse, "pth: " + what); }

// The global an object was made from, or nullptr.
std::optional<Value> callee_of(const Pickle& p, const Value& obj) {
  if (obj.kind == Kind::object && obj.callee != kNoValue) return p.at(obj.callee);
  return std::nullopt;
}

bool callee_is(const Pickle& p, const Value& obj, std::string_view module, std::string_view name) {
  const auto g = callee_of(p, obj);
  return g && g->text == module && g->name == name;
}

std::optional<std::span<const uint32_t>> args_of(const Pickle& p, const Value& obj) {
  if (obj.args == kNoValue) return std::nullopt;
  return p.at(obj.args).items;
}

void append_text(std::string& out, std::string_view s) {
  std::string cut(s.substr(0, kJsonString));
  if (s.size() > kJsonString) cut += "...";
  if (valid_utf8(cut)) {
    append_json_string(out, cut);
    return;
  }
  std::string fixed;
  for (unsigned char c : cut) {
    if (c < 0x80) fixed += static_cast<char>(c);
    else fixed += "\xEF\xBF\xBD";
  }
  append_json_string(out, fixed);
}

// The shortest %g text that reads back as the same double; JSON has no NaN/Infinity.
void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += std::isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"";
    return;
  }
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  out += buf;
  if (std::string_view(buf).find_first_of(".eE") == std::string_view::npos) out += ".0";
}

// Little-endian two's complement -> decimal, for ints wider than 64 bits (short ones only).
std::string big_decimal(std::string_view le) {
  if (le.size() > 64) return "<int of " + num(le.size()) + " bytes>";
  std::vector<uint8_t> mag(le.begin(), le.end());
  const bool neg = !mag.empty() && (mag.back() & 0x80);
  if (neg) {  // negate: invert and add one
    unsigned carry = 1;
    for (auto& b : mag) {
      const unsigned x = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(x);
      carry = x >> 8;
    }
  }
  std::string digits;
  bool nonzero = true;
  while (nonzero) {
    unsigned rem = 0;
    nonzero = false;
    for (size_t i = mag.size(); i-- > 0;) {
      const unsigned cur = (rem << 8) | mag[i];
      mag[i] = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
      if (mag[i]) nonzero = true;
    }
    digits += static_cast<char>('0' + rem);
  }
  if (neg) digits += '-';
  return std::string(digits.rbegin(), digits.rend());
}

// Values rendered per summary: shared references would otherwise let a few memo GETs
// expand into kJsonItems^kJsonDepth values.
constexpr uint64_t kJsonBudget = 2048;

void render(const Pickle& p, uint32_t id, std::string& out, int depth, uint64_t& budget) {
  const Value& v = p.at(id);
  if (budget == 0) {
    out += "\"...\"";
    return;
  }
  --budget;
  if (depth > kJsonDepth) {
    out += "\"...\"";
    return;
  }
  auto seq = [&](std::span<const uint32_t> items, size_t step) {
    out += '[';
    for (size_t i = 0; i < items.size(); i += step) {
      if (i) out += ',';
      if (i / step >= kJsonItems) {
        out += "\"... " + num((items.size() - i) / step) + " more\"";
        break;
      }
      render(p, items[i], out, depth + 1, budget);
    }
    out += ']';
  };
  switch (v.kind) {
    case Kind::none: out += "null"; return;
    case Kind::boolean: out += v.boolean ? "true" : "false"; return;
    case Kind::integer: out += std::to_string(v.integer); return;
    // Quoted: JSON readers (simdjson, JavaScript) cannot hold integers beyond 64 bits.
    case Kind::big_integer: append_text(out, v.name == "decimal" ? std::string(v.text) : big_decimal(v.text)); return;
    case Kind::floating: append_double(out, v.floating); return;
    case Kind::string: append_text(out, v.text); return;
    case Kind::bytes: out += "{\"bytes\":" + num(v.text.size()) + "}"; return;
    case Kind::tuple: case Kind::list: case Kind::set: case Kind::frozenset: seq(v.items, 1); return;
    case Kind::dict: {
      out += '{';
      for (size_t i = 0; i + 1 < v.entries.size(); i += 2) {
        if (i) out += ',';
        if (i / 2 >= kJsonItems) {
          out += "\"...\":" + num((v.entries.size() - i) / 2);
          break;
        }
        const Value& k = p.at(v.entries[i]);
        if (k.kind == Kind::string) append_text(out, k.text);
        else {
          std::string key;
          render(p, v.entries[i], key, kJsonDepth, budget);
          append_text(out, key);
        }
        out += ':';
        render(p, v.entries[i + 1], out, depth + 1, budget);
      }
      out += '}';
      return;
    }
    case Kind::global: append_text(out, std::string(v.text) + "." + std::string(v.name)); return;
    case Kind::persistent_id: out += "\"<storage>\""; return;
    case Kind::object: {
      const auto g = callee_of(p, v);
      const auto args = args_of(p, v);
      // protocol 2 writes bytes as _codecs.encode(text, 'latin1')
      if (g && g->text == "_codecs" && g->name == "encode" && args && !args->empty()) {
        // One byte per latin-1 character: count the UTF-8 text's code points.
        uint64_t n = 0;
        for (unsigned char c : p.at((*args)[0]).text) n += (c & 0xC0) != 0x80;
        out += "{\"bytes\":" + num(n) + "}";
        return;
      }
      if (g && (g->name == "set" || g->name == "frozenset" || g->name == "Size") && args && args->size() == 1) {
        render(p, (*args)[0], out, depth, budget);
        return;
      }
      // Other allowlisted objects (torch.device('cpu'), ...) as their constructor call.
      std::string text = g ? std::string(g->text) + "." + std::string(g->name) + "(" : "object(";
      if (args && args->size() == 1 && p.at((*args)[0]).kind == Kind::string) {
        text += "'" + std::string(p.at((*args)[0]).text.substr(0, kJsonString)) + "'";
      } else if (args && !args->empty()) {
        text += "...";
      }
      append_text(out, text + ")");
      return;
    }
  }
}

Result<int64_t> integer_at(const Pickle& p_, uint32_t v, const std::string& what, const std::string& path) {
  const Value& x = p_.at(v);
  if (x.kind != Kind::integer) return parse_error("tensor '" + path + "': " + what + " is not an integer");
  return x.integer;
}

Result<StorageRef> storage_at(const Pickle& p_, bool legacy_, uint32_t v, const std::string& path) {
  const Value& pid_holder = p_.at(v);
  if (pid_holder.kind != Kind::persistent_id) return parse_error("tensor '" + path + "': its storage is not a persistent id");
  const Value& pid = p_.at(pid_holder.callee);
  const size_t want = legacy_ ? 6 : 5;
  if (pid.kind != Kind::tuple || pid.items.size() != want) {
    return parse_error("tensor '" + path + "': the storage's persistent id is not a " + num(want) + "-tuple");
  }
  const Value& tag = p_.at(pid.items[0]);
  if (tag.kind != Kind::string || tag.text != "storage") return parse_error("tensor '" + path + "': the persistent id is not a 'storage' record");
  const Value& type = p_.at(pid.items[1]);
  StorageRef s;
  if (type.kind == Kind::global) s.type = storage_type(type.text, type.name);
  if (!s.type) return parse_error("tensor '" + path + "': the storage type is not a torch storage class");
  if (s.type->layout == StorageLayout::quantized) {
    return make_error(ErrorCode::unsupported, "pth: tensor '" + path + "' is stored in a quantized storage (torch." +
                                                  std::string(s.type->name) + "); quantized tensors are not supported");
  }
  const Value& key = p_.at(pid.items[2]);
  const Value& loc = p_.at(pid.items[3]);
  if (key.kind != Kind::string || loc.kind != Kind::string) return parse_error("tensor '" + path + "': the storage key or location is not a string");
  s.key = key.text;
  s.location = loc.text;
  AMN_ASSIGN(const int64_t numel, integer_at(p_, pid.items[4], "the storage size", path));
  if (numel < 0) return parse_error("tensor '" + path + "': negative storage size");
  s.numel = static_cast<uint64_t>(numel);
  if (legacy_) {
    const Value& view = p_.at(pid.items[5]);
    if (view.kind == Kind::tuple && view.items.size() == 3) {
      AMN_ASSIGN(const int64_t off, integer_at(p_, view.items[1], "the storage view offset", path));
      AMN_ASSIGN(const int64_t size, integer_at(p_, view.items[2], "the storage view size", path));
      if (off < 0 || size < 0 || static_cast<uint64_t>(off) > s.numel || static_cast<uint64_t>(size) > s.numel - static_cast<uint64_t>(off)) {
        return parse_error("tensor '" + path + "': storage view [" + std::to_string(off) + ", +" + std::to_string(size) +
                           ") lies outside storage '" + s.key + "' of " + num(s.numel) + " elements");
      }
      s.view_offset = static_cast<uint64_t>(off);
    } else if (view.kind != Kind::none) {
      return parse_error("tensor '" + path + "': the storage view metadata is neither None nor a 3-tuple");
    }
  }
  return s;
}

class Walker {
 public:
  Walker(const Pickle& p, bool legacy, const ParseLimits& limits)
      : p_(p), legacy_(legacy), limits_(effective_limits(limits)) {}

  Status walk(uint32_t v, const std::string& path, uint32_t depth);
  Walked out;

 private:
  Result<int64_t> integer(uint32_t v, const std::string& what, const std::string& path) {
    return integer_at(p_, v, what, path);
  }
  Result<std::vector<uint64_t>> dims(uint32_t v, const std::string& what, const std::string& path);
  Result<StorageRef> storage(uint32_t v, const std::string& path) { return storage_at(p_, legacy_, v, path); }
  Status tensor(const Value& obj, const std::string& path, uint32_t hops);
  bool structural(uint32_t v) const;
  void leaf(uint32_t v, const std::string& path);

  const Pickle& p_;
  bool legacy_;
  ParseLimits limits_;
  uint64_t visits_ = 0;
};

Result<std::vector<uint64_t>> Walker::dims(uint32_t v, const std::string& what, const std::string& path) {
  Value held = p_.at(v);
  const Value* x = &held;
  if (x->kind == Kind::object && callee_is(p_, *x, "torch", "Size") && args_of(p_, *x) && args_of(p_, *x)->size() == 1) {
    held = p_.at((*args_of(p_, *x))[0]);
  }
  if (x->kind != Kind::tuple && x->kind != Kind::list) return parse_error("tensor '" + path + "': " + what + " is not a tuple");
  if (x->items.size() > kHardMaxDims) {
    return make_error(ErrorCode::limit, "pth: tensor '" + path + "' has " + num(x->items.size()) + " dimensions (at most " + num(kHardMaxDims) + ")");
  }
  std::vector<uint64_t> out;
  for (uint32_t item : x->items) {
    AMN_ASSIGN(const int64_t d, integer(item, what, path));
    if (d < 0) return parse_error("tensor '" + path + "': " + what + " has a negative entry (" + std::to_string(d) + ")");
    out.push_back(static_cast<uint64_t>(d));
  }
  return out;
}

// _rebuild_tensor_v2(storage, offset, size, stride, ...) and the wrappers around it.
Status Walker::tensor(const Value& obj, const std::string& path, uint32_t hops) {
  const auto g = callee_of(p_, obj);
  const auto args = args_of(p_, obj);
  if (!g || !args) return parse_error("'" + path + "': an object without a callee or arguments");
  if (hops > 4) return parse_error("tensor '" + path + "': rebuild functions wrap each other too deeply");
  if (g->text == "torch._utils" && (g->name == "_rebuild_parameter" || g->name == "_rebuild_parameter_with_state")) {
    if (args->empty() || p_.at((*args)[0]).kind != Kind::object) return parse_error("tensor '" + path + "': a parameter without its tensor");
    return tensor(p_.at((*args)[0]), path, hops + 1);
  }
  if (g->text == "torch._tensor" && (g->name == "_rebuild_from_type_v2" || g->name == "_rebuild_from_type")) {
    // (func, type, args, state): the tensor is func(*args).
    if (args->size() < 3 || p_.at((*args)[0]).kind != Kind::global || p_.at((*args)[2]).kind != Kind::tuple) {
      return parse_error("tensor '" + path + "': malformed _rebuild_from_type arguments");
    }
    Value inner;
    inner.kind = Kind::object;
    inner.callee = (*args)[0];
    inner.args = (*args)[2];
    return tensor(inner, path, hops + 1);
  }
  if (g->text == "torch._utils" && g->name == "_rebuild_qtensor") {
    return make_error(ErrorCode::unsupported, "pth: tensor '" + path + "' is a quantized tensor (_rebuild_qtensor); not supported");
  }
  const bool v2 = g->text == "torch._utils" && g->name == "_rebuild_tensor_v2";
  const bool v1 = g->text == "torch._utils" && g->name == "_rebuild_tensor";
  if (!v1 && !v2) return parse_error("'" + path + "': " + std::string(g->text) + "." + std::string(g->name) + " does not build a tensor");
  if (args->size() < 4) return parse_error("tensor '" + path + "': " + std::string(g->name) + " with " + num(args->size()) + " arguments");
  FoundTensor t;
  t.name = path;
  AMN_ASSIGN(t.storage, storage((*args)[0], path));
  AMN_ASSIGN(const int64_t off, integer((*args)[1], "the storage offset", path));
  if (off < 0) return parse_error("tensor '" + path + "': negative storage offset");
  AMN_ASSIGN(t.shape, dims((*args)[2], "the size", path));
  AMN_ASSIGN(t.strides, dims((*args)[3], "the stride", path));
  if (t.shape.size() != t.strides.size()) {
    return parse_error("tensor '" + path + "': " + num(t.shape.size()) + " sizes but " + num(t.strides.size()) + " strides");
  }
  const auto total = checked_add(static_cast<uint64_t>(off), t.storage.view_offset);
  if (!total) return parse_error("tensor '" + path + "': storage offset overflows");
  t.storage_offset = *total;
  if (out.tensors.size() >= limits_.max_item_count) {
    return make_error(ErrorCode::limit, "pth: more than max_item_count (" + num(limits_.max_item_count) + ") tensors");
  }
  out.tensors.push_back(std::move(t));
  return {};
}

// Worth descending into: tensors and containers (a list of plain numbers is one value).
bool Walker::structural(uint32_t v) const {
  const Value& x = p_.at(v);
  if (x.kind == Kind::dict || x.kind == Kind::list || x.kind == Kind::tuple) return true;
  if (x.kind != Kind::object) return false;
  const auto g = callee_of(p_, x);
  return g && (g->text == "torch._utils" || g->text == "torch._tensor" || (g->text == "collections" && g->name == "OrderedDict"));
}

void Walker::leaf(uint32_t v, const std::string& path) {
  if (out.values.size() >= kMaxReportedValues) {
    ++out.values_omitted;
    return;
  }
  std::string json;
  uint64_t budget = kJsonBudget;
  render(p_, v, json, 0, budget);
  out.values.emplace_back(path, std::move(json));
}

std::string join(const std::string& path, const std::string& segment) {
  return path.empty() ? segment : path + "." + segment;
}

Status Walker::walk(uint32_t v, const std::string& path, uint32_t depth) {
  // Shared values are visited once per path that reaches them: memo replays that would
  // expand a small pickle into a huge tree stop here, as do cycles (through depth).
  if (++visits_ > limits_.max_item_count) {
    return make_error(ErrorCode::limit, "pth: the checkpoint's values expand to more than max_item_count (" +
                                            num(limits_.max_item_count) + ") when shared references are followed");
  }
  if (depth > pickle::kHardMaxPickleDepth) {
    return make_error(ErrorCode::limit, "pth: values nest deeper than " + num(pickle::kHardMaxPickleDepth) +
                                            " levels (or contain themselves) at '" + path.substr(0, 200) + "'");
  }
  if (path.size() > kHardMaxNameBytes) {
    return make_error(ErrorCode::limit, "pth: a value's path is longer than " + num(kHardMaxNameBytes) + " bytes");
  }
  const Value& x = p_.at(v);
  const bool ordered_dict = x.kind == Kind::object && callee_is(p_, x, "collections", "OrderedDict");
  if (x.kind == Kind::dict || ordered_dict) {
    if (x.entries.empty() && !path.empty()) leaf(v, path);
    for (size_t i = 0; i + 1 < x.entries.size(); i += 2) {
      const Value& k = p_.at(x.entries[i]);
      std::string seg;
      if (k.kind == Kind::string) seg = k.text;
      else if (k.kind == Kind::integer) seg = std::to_string(k.integer);
      else {
        uint64_t budget = kJsonBudget;
        render(p_, x.entries[i], seg, kJsonDepth, budget);
      }
      AMN_TRY(walk(x.entries[i + 1], join(path, seg), depth + 1));
    }
    return {};
  }
  if (x.kind == Kind::list || x.kind == Kind::tuple) {
    bool deeper = false;
    for (uint32_t item : x.items) deeper = deeper || structural(item);
    if (!deeper) {
      leaf(v, path);
      return {};
    }
    for (size_t i = 0; i < x.items.size(); ++i) AMN_TRY(walk(x.items[i], join(path, num(i)), depth + 1));
    return {};
  }
  if (x.kind == Kind::object) {
    const auto g = callee_of(p_, x);
    if (g && (g->text == "torch._utils" || g->text == "torch._tensor")) return tensor(x, path, 0);
  }
  leaf(v, path);
  return {};
}

}  // namespace

Result<Walked> walk_checkpoint(const Pickle& p, bool legacy, const ParseLimits& limits) {
  if (p.root == kNoValue) return parse_error("the pickle holds no value");
  Walker w(p, legacy, limits);
  AMN_TRY(w.walk(p.root, "", 0));
  // torch.save(tensor) or torch.save(3): a root that is not a container has no path.
  for (auto& t : w.out.tensors) if (t.name.empty()) t.name = "tensor";
  for (auto& [path, json] : w.out.values) if (path.empty()) path = "value";
  return std::move(w.out);
}

Result<StorageRef> storage_ref(const Pickle& p, uint32_t persistent_id, bool legacy) {
  return storage_at(p, legacy, persistent_id, "(storage)");
}

std::string value_json(const Pickle& p, uint32_t v) {
  std::string out;
  uint64_t budget = kJsonBudget;
  render(p, v, out, 0, budget);
  return out;
}

}  // namespace amn::pth
