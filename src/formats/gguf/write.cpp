#include "formats/gguf/write.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/checked.h"
#include "core/limits.h"
#include "core/text.h"

namespace amn {
namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";


bool known_type(GgufType t) { return static_cast<uint32_t>(t) < kGgufTypeCount; }

bool is_unsigned(GgufType t) {
  return t == GgufType::UINT8 || t == GgufType::UINT16 || t == GgufType::UINT32 || t == GgufType::UINT64;
}
bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}

std::string type_label(GgufType t) {
  return known_type(t) ? std::string(gguf_type_name(t)) : "type " + num(static_cast<uint32_t>(t));
}

Error arg_error(std::string message) {
  return make_error(ErrorCode::invalid_argument, "gguf write: " + std::move(message));
}
Error limit_error(std::string message) { return make_error(ErrorCode::limit, "gguf write: " + std::move(message)); }

uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

// Little-endian output, whatever the host's order.
struct Out {
  std::vector<uint8_t>& b;
  void put(uint64_t v, unsigned n) {
    for (unsigned k = 0; k < n; ++k) b.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  void put_str(std::string_view s) {
    put(s.size(), 8);
    b.insert(b.end(), s.begin(), s.end());
  }
};

uint64_t float_bits(GgufType t, double f) {
  if (t == GgufType::FLOAT32) {
    const float x = static_cast<float>(f);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    return bits;
  }
  uint64_t bits;
  std::memcpy(&bits, &f, 8);
  return bits;
}

Status check_name(std::string_view name, const std::string& what) {
  if (name.size() > kHardMaxNameBytes) {
    return limit_error(what + " is " + num(name.size()) + " bytes long, more than the limit of " +
                       num(kHardMaxNameBytes));
  }
  if (!valid_utf8(name)) return arg_error(what + " " + quote(name) + " is not valid UTF-8");
  return {};
}

// The first index of a name that repeats an earlier one, with that earlier index.
template <class Name>
std::optional<std::pair<size_t, size_t>> first_duplicate(size_t n, Name name) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return name(a) != name(b) ? name(a) < name(b) : a < b;
  });
  std::optional<std::pair<size_t, size_t>> found;
  for (size_t k = 1; k < n; ++k) {
    if (name(order[k]) == name(order[k - 1]) && (!found || order[k] < found->second)) {
      found = std::pair{order[k - 1], order[k]};
    }
  }
  return found;
}

// Scalar range: a value in a GgufValue's wide field must fit the type it is written as.
Status check_scalar(const GgufValue& v, const std::string& who) {
  const unsigned bits = static_cast<unsigned>(8 * gguf_fixed_size(v.type));
  if (is_unsigned(v.type) && bits < 64 && v.u >> bits) {
    return arg_error(who + " is " + num(v.u) + ", out of range for " + type_label(v.type));
  }
  if (is_signed(v.type) && bits < 64) {
    const int64_t lo = -(int64_t{1} << (bits - 1));
    const int64_t hi = (int64_t{1} << (bits - 1)) - 1;
    if (v.i < lo || v.i > hi) {
      return arg_error(who + " is " + std::to_string(v.i) + ", out of range for " + type_label(v.type));
    }
  }
  if (v.type == GgufType::STRING && v.str.size() > kHardMaxGgufString) {
    return limit_error(who + " is a string of " + num(v.str.size()) + " bytes, more than the limit of " +
                       num(kHardMaxGgufString));
  }
  return {};
}

class HeaderWriter {
 public:
  explicit HeaderWriter(std::vector<uint8_t>& bytes) : out_{bytes} {}

  Status kv(const std::string& key, const GgufValue& value) {
    out_.put_str(key);
    if (!known_type(value.type)) return arg_error("the value of key " + quote(key) + " has unknown " + type_label(value.type));
    out_.put(static_cast<uint32_t>(value.type), 4);
    return this->value(value, key, "the value of key " + quote(key));
  }

 private:
  Status value(const GgufValue& v, const std::string& key, const std::string& who) {
    if (v.type == GgufType::ARRAY) return array(v, 1, key);
    AMN_TRY(check_scalar(v, who));
    switch (v.type) {
      case GgufType::STRING: out_.put_str(v.str); break;
      case GgufType::BOOL: out_.put(v.b ? 1 : 0, 1); break;
      case GgufType::FLOAT32: case GgufType::FLOAT64:
        out_.put(float_bits(v.type, v.f), static_cast<unsigned>(gguf_fixed_size(v.type)));
        break;
      default:
        out_.put(is_signed(v.type) ? static_cast<uint64_t>(v.i) : v.u, static_cast<unsigned>(gguf_fixed_size(v.type)));
    }
    return {};
  }

  // depth counts the arrays open, the outermost being 1 (as the reader counts them).
  Status array(const GgufValue& v, uint32_t depth, const std::string& key) {
    const std::string who = "array " + quote(key) + (depth > 1 ? " (nested " + num(depth - 1) + " deep)" : "");
    if (!known_type(v.elem_type)) return arg_error(who + " has elements of unknown " + type_label(v.elem_type));
    if (depth > kHardMaxGgufArrayDepth) {
      return limit_error("arrays nest deeper than " + num(kHardMaxGgufArrayDepth) + " levels in key " + quote(key));
    }
    if (v.count > kHardMaxGgufArrayLength) {
      return limit_error(who + " has " + num(v.count) + " elements, more than the limit of " +
                         num(kHardMaxGgufArrayLength));
    }
    out_.put(static_cast<uint32_t>(v.elem_type), 4);
    out_.put(v.count, 8);
    if (const uint64_t size = gguf_fixed_size(v.elem_type)) {
      if (v.raw.size() != v.count * size) {
        return arg_error(who + " of " + num(v.count) + " " + type_label(v.elem_type) + " elements holds " +
                         num(v.raw.size()) + " bytes, not " + num(v.count * size));
      }
      if (v.elem_type == GgufType::BOOL) {
        for (uint8_t b : v.raw) out_.b.push_back(b ? 1 : 0);
      } else {
        out_.b.insert(out_.b.end(), v.raw.begin(), v.raw.end());  // already little-endian
      }
    } else if (v.elem_type == GgufType::STRING) {
      if (v.ends.size() != v.count || (v.count && v.ends.back() != v.arena.size())) {
        return arg_error(who + " of " + num(v.count) + " strings has " + num(v.ends.size()) +
                         " end offsets into an arena of " + num(v.arena.size()) + " bytes");
      }
      uint64_t begin = 0;
      for (uint64_t k = 0; k < v.count; ++k) {
        if (v.ends[k] < begin) return arg_error(who + " has decreasing string end offsets at element " + num(k));
        if (v.ends[k] - begin > kHardMaxGgufString) {
          return limit_error("element " + num(k) + " of " + who + " is a string of " + num(v.ends[k] - begin) +
                             " bytes, more than the limit of " + num(kHardMaxGgufString));
        }
        out_.put_str(std::string_view(v.arena).substr(begin, v.ends[k] - begin));
        begin = v.ends[k];
      }
    } else {
      if (v.items.size() != v.count) {
        return arg_error(who + " of " + num(v.count) + " arrays holds " + num(v.items.size()) + " items");
      }
      for (uint64_t k = 0; k < v.count; ++k) {
        if (v.items[k].type != GgufType::ARRAY) {
          return arg_error("element " + num(k) + " of " + who + " is a " + type_label(v.items[k].type) +
                           ", not an ARRAY");
        }
        AMN_TRY(array(v.items[k], depth + 1, key));
      }
    }
    return {};
  }

  Out out_;
};

Status check_alignment(const std::vector<std::pair<std::string, GgufValue>>& kv, uint64_t alignment,
                       bool& add_key) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return arg_error("alignment " + num(alignment) + " is not a non-zero power of two");
  }
  if (alignment > UINT32_MAX) return arg_error("alignment " + num(alignment) + " does not fit general.alignment (UINT32)");
  add_key = alignment != kGgufDefaultAlignment;
  for (const auto& [key, value] : kv) {
    if (key != kAlignmentKey) continue;
    if (value.type != GgufType::UINT32) {
      return arg_error("general.alignment has type " + type_label(value.type) + ", it must be UINT32");
    }
    if (value.u != alignment) {
      return arg_error("general.alignment is " + num(value.u) + " but the layout's alignment is " + num(alignment));
    }
    add_key = false;
  }
  return {};
}

Status check_tensor(const GgufWriteTensor& t) {
  const std::string who = "tensor " + quote(t.name);
  AMN_TRY(check_name(t.name, "the name of " + who));
  if (t.ne.size() > kGgmlMaxDims) {
    return arg_error(who + " has " + num(t.ne.size()) + " dimensions, more than GGML_MAX_DIMS (" + num(kGgmlMaxDims) + ")");
  }
  uint64_t elements = 1;
  for (size_t d = 0; d < t.ne.size(); ++d) {
    if (t.ne[d] == 0 || t.ne[d] > uint64_t(INT64_MAX)) {
      return arg_error(who + " has ne[" + num(d) + "] = " + num(t.ne[d]) + ", outside 1 .. 2^63-1");
    }
    auto m = checked_mul(elements, t.ne[d]);
    if (!m || *m > uint64_t(INT64_MAX)) return arg_error("the element count of " + who + " overflows int64");
    elements = *m;
  }
  const GgmlTraits* info = ggml_traits(t.ggml_type);
  if (!info) return arg_error(who + " has unknown ggml type id " + num(ggml_id(t.ggml_type)));
  if (!ggml_type_sized(info)) {
    return arg_error(who + " has ggml type " + std::string(info->name) + " (id " + num(ggml_id(t.ggml_type)) +
                     "), which ggml removed: it has no size");
  }
  const uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
  if (ne0 % info->block_elements != 0) {
    return arg_error(who + " of type " + std::string(info->name) + " has ne[0] = " + num(ne0) +
                     ", not a multiple of the block size " + num(info->block_elements));
  }
  auto nbytes = ggml_nbytes(*info, elements);
  if (!nbytes) return arg_error("the size in bytes of " + who + " overflows");
  if (*nbytes != t.nbytes) {
    return arg_error(who + " of type " + std::string(info->name) + " with " + num(elements) + " elements takes " +
                     num(*nbytes) + " bytes, but nbytes is " + num(t.nbytes));
  }
  return {};
}

}  // namespace

Result<GgufLayout> gguf_layout(const std::vector<std::pair<std::string, GgufValue>>& kv,
                               std::span<const GgufWriteTensor> tensors, uint64_t alignment) {
  bool add_alignment = false;
  AMN_TRY(check_alignment(kv, alignment, add_alignment));
  const uint64_t n_kv = kv.size() + (add_alignment ? 1 : 0);
  if (n_kv > kHardMaxGgufKv) return limit_error(num(n_kv) + " KVs, more than the limit of " + num(kHardMaxGgufKv));
  if (tensors.size() > kHardMaxGgufTensors) {
    return limit_error(num(tensors.size()) + " tensors, more than the limit of " + num(kHardMaxGgufTensors));
  }
  for (size_t k = 0; k < kv.size(); ++k) {
    if (kv[k].first.empty()) return arg_error("key " + num(k) + " is empty");
    AMN_TRY(check_name(kv[k].first, "key " + num(k)));
  }
  if (auto d = first_duplicate(kv.size(), [&](size_t k) -> const std::string& { return kv[k].first; })) {
    return arg_error("duplicate key " + quote(kv[d->first].first) + " (KVs " + num(d->first) + " and " +
                     num(d->second) + ")");
  }
  for (const auto& t : tensors) AMN_TRY(check_tensor(t));
  if (auto d = first_duplicate(tensors.size(), [&](size_t k) -> const std::string& { return tensors[k].name; })) {
    return arg_error("duplicate tensor name " + quote(tensors[d->first].name) + " (tensors " + num(d->first) +
                     " and " + num(d->second) + ")");
  }

  GgufLayout layout;
  // Offsets: ggml requires each to be the running sum of the padded sizes before it.
  layout.offsets.reserve(tensors.size());
  uint64_t next = 0;
  for (const auto& t : tensors) {
    layout.offsets.push_back(next);
    auto end = checked_add(next, t.nbytes);
    auto padded = end ? checked_add(*end, alignment - 1) : std::nullopt;
    if (!padded) return arg_error("the data section overflows 64 bits at tensor " + quote(t.name));
    layout.data_bytes = *end;
    next = *padded / alignment * alignment;
  }

  std::vector<uint8_t>& h = layout.header;
  Out out{h};
  h.insert(h.end(), {'G', 'G', 'U', 'F'});
  out.put(kGgufVersion, 4);
  out.put(tensors.size(), 8);
  out.put(n_kv, 8);
  HeaderWriter writer(h);
  for (const auto& [key, value] : kv) AMN_TRY(writer.kv(key, value));
  if (add_alignment) {
    AMN_TRY(writer.kv(std::string(kAlignmentKey), gguf_value_uint(GgufType::UINT32, alignment)));
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& t = tensors[k];
    out.put_str(t.name);
    out.put(t.ne.size(), 4);
    for (uint64_t d : t.ne) out.put(d, 8);
    out.put(ggml_id(t.ggml_type), 4);
    out.put(layout.offsets[k], 8);
  }
  h.resize(align_up(h.size(), alignment), 0);
  return layout;
}

GgufValue gguf_value_string(std::string_view s) {
  GgufValue v;
  v.type = GgufType::STRING;
  v.str = std::string(s);
  return v;
}

GgufValue gguf_value_uint(GgufType type, uint64_t u) {
  GgufValue v;
  v.type = type;
  v.u = u;
  return v;
}

GgufValue gguf_value_int(GgufType type, int64_t i) {
  GgufValue v;
  v.type = type;
  v.i = i;
  return v;
}

GgufValue gguf_value_float(GgufType type, double f) {
  GgufValue v;
  v.type = type;
  v.f = type == GgufType::FLOAT32 ? static_cast<double>(static_cast<float>(f)) : f;
  return v;
}

GgufValue gguf_value_bool(bool b) {
  GgufValue v;
  v.type = GgufType::BOOL;
  v.b = b;
  return v;
}

GgufValue gguf_value_array(GgufType elem_type) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem_type = elem_type;
  return v;
}

GgufValue gguf_value_string_array(std::span<const std::string> items) {
  GgufValue v = gguf_value_array(GgufType::STRING);
  size_t total = 0;
  for (const auto& s : items) total += s.size();
  v.arena.reserve(total);
  v.ends.reserve(items.size());
  for (const auto& s : items) {
    v.arena += s;
    v.ends.push_back(v.arena.size());
  }
  v.count = items.size();
  return v;
}

bool gguf_array_append(GgufValue& array, const GgufValue& e) {
  if (array.type != GgufType::ARRAY || e.type != array.elem_type) return false;
  switch (e.type) {
    case GgufType::ARRAY: array.items.push_back(e); break;
    case GgufType::STRING:
      array.arena += e.str;
      array.ends.push_back(array.arena.size());
      break;
    case GgufType::BOOL: array.raw.push_back(e.b ? 1 : 0); break;
    default: {
      const unsigned n = static_cast<unsigned>(gguf_fixed_size(e.type));
      if (n == 0) return false;  // an unknown type
      const uint64_t bits = (e.type == GgufType::FLOAT32 || e.type == GgufType::FLOAT64) ? float_bits(e.type, e.f)
                            : is_signed(e.type)                                         ? static_cast<uint64_t>(e.i)
                                                                                        : e.u;
      Out{array.raw}.put(bits, n);
    }
  }
  ++array.count;
  return true;
}

}  // namespace amn
