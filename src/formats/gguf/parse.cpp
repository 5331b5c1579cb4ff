#include "formats/gguf/parse.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/text.h"

namespace amn {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kHeaderFixedBytes = 24;  // magic, version, tensor count, KV count
// The fewest bytes one entry can occupy: a KV is a key length (8), a key of at least one
// byte, a type (4) and the smallest value (1); a tensor info is a name length (8), n_dims
// (4), type (4) and offset (8) (an empty name and no dimensions).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
// Guesses used only to size the read-ahead window (never to validate).
constexpr uint64_t kGuessKvBytes = 64;
constexpr uint64_t kGuessTensorInfoBytes = 80;
constexpr uint64_t kGuessStringBytes = 16;


// The smallest encoding of one element of type t (for count-versus-bytes checks).
uint64_t min_size(GgufType t) {
  if (t == GgufType::STRING) return 8;
  if (t == GgufType::ARRAY) return 4 + 8;
  return gguf_fixed_size(t);
}

uint64_t load(const uint8_t* p, unsigned n, bool big_endian) { return big_endian ? load_be(p, n) : load_le(p, n); }

double as_double(uint64_t bits, unsigned bytes) {
  if (bytes == 4) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

Error parse_error(std::string message, uint64_t offset) {
  return make_error(ErrorCode::parse, "gguf: " + std::move(message), offset);
}

Error limit_error(std::string message, uint64_t offset) {
  return make_error(ErrorCode::limit, "gguf: " + std::move(message), offset);
}

uint64_t sat_add(uint64_t a, uint64_t b) { return checked_add(a, b).value_or(UINT64_MAX); }
uint64_t sat_mul(uint64_t a, uint64_t b) { return checked_mul(a, b).value_or(UINT64_MAX); }

class Parser {
 public:
  Parser(FileSet& files, uint32_t file, const ParseLimits& limits)
      : files_(files), file_(file), limits_(effective_limits(limits)), size_(files.size(file)) {}

  Result<GgufFile> run();

 private:
  // Where the parser stands, so a window that runs short can be grown towards where the
  // header probably ends instead of blindly.
  struct ArrayProgress {
    uint64_t start;  // file offset of the first element
    uint64_t done;   // elements read
    uint64_t total;
  };

  Status ensure(uint64_t n, const std::string& what);
  Status grow(uint64_t min_end);
  uint64_t projected_header_end() const;
  Status charge(uint64_t bytes, const std::string& what);

  const uint8_t* at() const { return win_.data() + pos_; }
  Status read_uint(unsigned bytes, uint64_t& out, const std::string& what);
  Status read_string(std::string& out, uint64_t max_len, const std::string& what);
  Status read_value(GgufType type, GgufValue& out, uint32_t depth, const std::string& key);
  Status read_array(GgufValue& out, uint32_t depth, const std::string& key);
  Status read_kv_section(uint64_t n_kv, GgufFile& out);
  Status read_tensor_infos(uint64_t n_tensors, GgufFile& out);
  Status apply_alignment(GgufFile& out);
  Status place_tensors(GgufFile& out);
  Status read_split(GgufFile& out);

  FileSet& files_;
  uint32_t file_;
  ParseLimits limits_;
  uint64_t size_;
  std::span<const uint8_t> win_;  // bytes [0, win_.size()) of the file
  uint64_t pos_ = 0;
  bool be_ = false;
  uint64_t charged_ = 0;

  std::vector<ArrayProgress> arrays_;  // open arrays, outermost first
  uint64_t kv_left_ = 0;               // KVs after the one being read
  uint64_t tensors_total_ = 0;
  uint64_t tensors_done_ = 0;
  uint64_t tensor_infos_start_ = 0;
  bool in_tensor_infos_ = false;
};

Status Parser::charge(uint64_t bytes, const std::string& what) {
  if (bytes > limits_.max_single_alloc) {
    return limit_error(what + " needs " + num(bytes) + " bytes, more than max_single_alloc (" +
                           num(limits_.max_single_alloc) + ")", pos_);
  }
  charged_ = sat_add(charged_, bytes);
  if (charged_ > limits_.max_total_bytes) {
    return limit_error("the header's metadata needs more than max_total_bytes (" +
                           num(limits_.max_total_bytes) + ") of memory, at " + what, pos_);
  }
  return {};
}

uint64_t Parser::projected_header_end() const {
  uint64_t end = pos_;
  if (!arrays_.empty()) {
    // The outermost open array: project its remaining elements at the average size seen.
    const ArrayProgress& a = arrays_.front();
    const uint64_t avg = a.done ? std::max<uint64_t>((pos_ - a.start) / a.done, 1) : kGuessStringBytes;
    end = sat_add(end, sat_mul(a.total - a.done, avg));
  }
  if (in_tensor_infos_) {
    const uint64_t avg = tensors_done_ ? std::max<uint64_t>((pos_ - tensor_infos_start_) / tensors_done_, 1)
                                       : kGuessTensorInfoBytes;
    end = sat_add(end, sat_mul(tensors_total_ - tensors_done_, avg));
  } else {
    end = sat_add(end, sat_mul(kv_left_, kGuessKvBytes));
    end = sat_add(end, sat_mul(tensors_total_, kGuessTensorInfoBytes));
  }
  return end;
}

// Grows the window to cover [0, min_end) at least: first to kGgufFirstRequest (parse.h
// says why), then at least 1.5 × what is held (so a header of H bytes is fetched in
// O(log H) rounds and never more than 1.5 H + 1 MiB) and towards the projected header end
// plus a quarter.
Status Parser::grow(uint64_t min_end) {
  const uint64_t held = win_.size();
  const uint64_t projected = projected_header_end();
  uint64_t next = held < kGgufFirstRequest && min_end <= kGgufFirstRequest
                      ? kGgufFirstRequest
                      : std::max({min_end, sat_add(held, held / 2), kGgufFirstWindow,
                                  sat_add(sat_add(projected, projected / 4), 64 * 1024)});
  next = std::min(next, size_);
  AMN_ASSIGN(auto bytes, files_.read(file_, 0, next));
  win_ = bytes;
  return {};
}

Status Parser::ensure(uint64_t n, const std::string& what) {
  if (n <= win_.size() - pos_) return {};
  if (n > size_ - pos_) {
    return parse_error("truncated: " + what + " needs " + num(n) + " bytes at offset " + num(pos_) +
                           " but the file ends at " + num(size_), pos_);
  }
  return grow(pos_ + n);
}

Status Parser::read_uint(unsigned bytes, uint64_t& out, const std::string& what) {
  AMN_TRY(ensure(bytes, what));
  out = load(at(), bytes, be_);
  pos_ += bytes;
  return {};
}

Status Parser::read_string(std::string& out, uint64_t max_len, const std::string& what) {
  uint64_t len;
  const uint64_t start = pos_;
  AMN_TRY(read_uint(8, len, "the length of " + what));
  if (len > max_len) {
    return limit_error(what + " is " + num(len) + " bytes long, more than the limit of " + num(max_len), start);
  }
  if (len > size_ - pos_) {
    return parse_error("string length " + num(len) + " of " + what + " at offset " + num(start) +
                           " runs past the end of the file (" + num(size_ - pos_) + " bytes remain)", start);
  }
  AMN_TRY(charge(len, what));
  AMN_TRY(ensure(len, what));
  out.assign(reinterpret_cast<const char*>(at()), len);
  pos_ += len;
  return {};
}

Status Parser::read_value(GgufType type, GgufValue& out, uint32_t depth, const std::string& key) {
  out.type = type;
  const std::string what = "the value of key " + quote(key);
  switch (type) {
    case GgufType::STRING:
      return read_string(out.str, kHardMaxGgufString, "the string value of key " + quote(key));
    case GgufType::ARRAY:
      return read_array(out, depth + 1, key);
    default: break;
  }
  const unsigned n = static_cast<unsigned>(gguf_fixed_size(type));
  uint64_t bits = 0;
  AMN_TRY(read_uint(n, bits, what));
  switch (type) {
    case GgufType::UINT8: case GgufType::UINT16: case GgufType::UINT32: case GgufType::UINT64:
      out.u = bits;
      break;
    case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64:
      out.i = sign_extend(bits, n);
      break;
    case GgufType::FLOAT32: case GgufType::FLOAT64:
      out.f = as_double(bits, n);
      break;
    case GgufType::BOOL:
      out.b = bits != 0;
      break;
    default: break;
  }
  return {};
}

Status Parser::read_array(GgufValue& out, uint32_t depth, const std::string& key) {
  const uint64_t start = pos_;
  uint64_t elem;
  AMN_TRY(read_uint(4, elem, "the element type of array " + quote(key)));
  if (elem >= kGgufTypeCount) {
    return parse_error("unknown value type " + num(elem) + " for the elements of array " + quote(key), start);
  }
  out.elem_type = static_cast<GgufType>(elem);
  if (out.elem_type == GgufType::ARRAY && depth + 1 > kHardMaxGgufArrayDepth) {
    return limit_error("arrays nest deeper than " + num(kHardMaxGgufArrayDepth) + " levels in key " + quote(key), start);
  }
  uint64_t count;
  AMN_TRY(read_uint(8, count, "the length of array " + quote(key)));
  const uint64_t max_len = std::min(kHardMaxGgufArrayLength, limits_.max_item_count);
  if (count > max_len) {
    return limit_error("array " + quote(key) + " has " + num(count) + " elements, more than the limit of " +
                           num(max_len), start);
  }
  const uint64_t need = count * min_size(out.elem_type);  // count <= 1e6: no overflow
  if (need > size_ - pos_) {
    return parse_error("array " + quote(key) + " claims " + num(count) + " elements of type " +
                           std::string(gguf_type_name(out.elem_type)) + " (at least " + num(need) +
                           " bytes) but only " + num(size_ - pos_) + " bytes remain in the file", start);
  }
  out.count = count;
  const uint64_t fixed = gguf_fixed_size(out.elem_type);
  arrays_.push_back({pos_, 0, count});
  if (fixed) {
    const unsigned n = static_cast<unsigned>(fixed);
    AMN_TRY(charge(need, "array " + quote(key)));
    AMN_TRY(ensure(need, "array " + quote(key)));
    out.raw.resize(need);
    if (need == 0) {
      // an empty array: nothing to copy (memcpy from an empty vector's null data is UB)
    } else if (!be_ || n == 1) {
      std::memcpy(out.raw.data(), at(), need);
    } else {
      for (uint64_t k = 0; k < count; ++k) {
        for (unsigned b = 0; b < n; ++b) out.raw[k * n + b] = at()[k * n + (n - 1 - b)];
      }
    }
    pos_ += need;
  } else if (out.elem_type == GgufType::STRING) {
    AMN_TRY(charge(count * 8, "array " + quote(key)));
    out.ends.reserve(count);
    const std::string what = "a string of array " + quote(key);
    for (uint64_t k = 0; k < count; ++k) {
      arrays_.back().done = k;
      uint64_t len;
      const uint64_t s = pos_;
      AMN_TRY(read_uint(8, len, "the length of " + what));
      if (len > kHardMaxGgufString) {
        return limit_error(what + " is " + num(len) + " bytes long, more than the limit of " +
                               num(kHardMaxGgufString), s);
      }
      if (len > size_ - pos_) {
        return parse_error("string length " + num(len) + " of element " + num(k) + " of array " + quote(key) +
                               " at offset " + num(s) + " runs past the end of the file (" + num(size_ - pos_) +
                               " bytes remain)", s);
      }
      AMN_TRY(charge(len, what));
      AMN_TRY(ensure(len, what));
      out.arena.append(reinterpret_cast<const char*>(at()), len);
      pos_ += len;
      out.ends.push_back(out.arena.size());
    }
  } else {  // nested arrays
    AMN_TRY(charge(sat_mul(count, sizeof(GgufValue)), "array " + quote(key)));
    out.items.resize(count);
    for (uint64_t k = 0; k < count; ++k) {
      arrays_.back().done = k;
      out.items[k].type = GgufType::ARRAY;
      AMN_TRY(read_array(out.items[k], depth + 1, key));
    }
  }
  arrays_.pop_back();
  return {};
}

Status Parser::read_kv_section(uint64_t n_kv, GgufFile& out) {
  for (uint64_t k = 0; k < n_kv; ++k) {
    kv_left_ = n_kv - k - 1;
    const uint64_t start = pos_;
    std::string key;
    AMN_TRY(read_string(key, kHardMaxNameBytes, "key " + num(k)));
    if (key.empty()) return parse_error("key " + num(k) + " is empty", start);
    if (!valid_utf8(key)) return parse_error("key " + num(k) + " " + quote(key) + " is not valid UTF-8", start);
    uint64_t type;
    const uint64_t type_at = pos_;
    AMN_TRY(read_uint(4, type, "the value type of key " + quote(key)));
    if (type >= kGgufTypeCount) {
      return parse_error("unknown value type " + num(type) + " for key " + quote(key), type_at);
    }
    AMN_TRY(charge(sizeof(std::pair<std::string, GgufValue>), "key " + quote(key)));
    GgufValue value;
    AMN_TRY(read_value(static_cast<GgufType>(type), value, 0, key));
    out.kv.emplace_back(std::move(key), std::move(value));
  }
  kv_left_ = 0;
  // Duplicate keys: ggml and gguf-py both refuse them.
  std::vector<uint32_t> order(out.kv.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return out.kv[a].first != out.kv[b].first ? out.kv[a].first < out.kv[b].first : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    if (out.kv[order[k]].first == out.kv[order[k - 1]].first) {
      return parse_error("duplicate key " + quote(out.kv[order[k]].first) + " (KVs " + num(order[k - 1]) +
                             " and " + num(order[k]) + ")", kNoOffset);
    }
  }
  return {};
}

Status Parser::apply_alignment(GgufFile& out) {
  const GgufValue* a = out.find("general.alignment");
  if (!a) return {};
  if (a->type != GgufType::UINT32) {
    return parse_error("general.alignment has type " + std::string(gguf_type_name(a->type)) +
                           ", it must be UINT32", kNoOffset);
  }
  if (a->u == 0) return parse_error("general.alignment is 0, it must be a non-zero power of two", kNoOffset);
  if ((a->u & (a->u - 1)) != 0) {
    return parse_error("general.alignment " + num(a->u) + " is not a power of two", kNoOffset);
  }
  out.alignment = a->u;
  return {};
}

Status Parser::read_tensor_infos(uint64_t n_tensors, GgufFile& out) {
  in_tensor_infos_ = true;
  tensors_total_ = n_tensors;
  tensor_infos_start_ = pos_;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    tensors_done_ = k;
    const uint64_t start = pos_;
    GgufTensorInfo t;
    AMN_TRY(read_string(t.name, kHardMaxNameBytes, "the name of tensor " + num(k)));
    if (!valid_utf8(t.name)) return parse_error("the name of tensor " + num(k) + " is not valid UTF-8", start);
    const std::string who = "tensor " + quote(t.name);
    uint64_t n_dims;
    AMN_TRY(read_uint(4, n_dims, "n_dims of " + who));
    if (n_dims > kGgmlMaxDims) {
      return parse_error(who + " has n_dims " + num(n_dims) + ", more than GGML_MAX_DIMS (" + num(kGgmlMaxDims) + ")",
                         pos_ - 4);
    }
    AMN_TRY(charge(sizeof(GgufTensorInfo) + 8 * n_dims, who));
    uint64_t elements = 1;
    for (uint64_t d = 0; d < n_dims; ++d) {
      uint64_t ne;
      AMN_TRY(read_uint(8, ne, "ne[" + num(d) + "] of " + who));
      if (ne > uint64_t(INT64_MAX)) {
        return parse_error(who + " has ne[" + num(d) + "] = " + std::to_string(static_cast<int64_t>(ne)) +
                               ", a negative dimension", pos_ - 8);
      }
      if (ne == 0) {
        return parse_error(who + " has a zero dimension (ne[" + num(d) + "] = 0)", pos_ - 8);
      }
      t.ne.push_back(ne);
      auto m = checked_mul(elements, ne);
      if (!m || *m > uint64_t(INT64_MAX)) {
        std::string shape;
        for (uint64_t x : t.ne) shape += (shape.empty() ? "" : ", ") + num(x);
        return parse_error("element count of " + who + " overflows int64 (ne = [" + shape + (d + 1 < n_dims ? ", ..." : "") + "])",
                           pos_ - 8);
      }
      elements = *m;
    }
    t.elements = elements;
    uint64_t type, offset;
    AMN_TRY(read_uint(4, type, "the type of " + who));
    t.type = static_cast<GgmlType>(type);
    AMN_TRY(read_uint(8, offset, "the data offset of " + who));
    t.offset = offset;
    out.tensors.push_back(std::move(t));
  }
  tensors_done_ = n_tensors;
  in_tensor_infos_ = false;
  std::vector<uint32_t> order(out.tensors.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return out.tensors[a].name != out.tensors[b].name ? out.tensors[a].name < out.tensors[b].name : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    if (out.tensors[order[k]].name == out.tensors[order[k - 1]].name) {
      return parse_error("duplicate tensor name " + quote(out.tensors[order[k]].name) + " (tensors " +
                             num(order[k - 1]) + " and " + num(order[k]) + ")", kNoOffset);
    }
  }
  return {};
}

Status Parser::place_tensors(GgufFile& out) {
  if (out.tensors.empty()) return {};
  if (out.data_offset > size_) {
    return parse_error("tensor data past EOF: the data section starts at " + num(out.data_offset) +
                           " (the header padded to " + num(out.alignment) + ") but the file has " + num(size_) +
                           " bytes", size_);
  }
  const uint64_t data_bytes = size_ - out.data_offset;
  for (auto& t : out.tensors) {
    const std::string who = "tensor " + quote(t.name);
    const GgmlTraits* info = ggml_traits(t.type);
    if (t.offset % out.alignment != 0) {
      return parse_error(who + " has data offset " + num(t.offset) + ", not a multiple of the alignment " +
                             num(out.alignment) + " (misaligned)", kNoOffset);
    }
    if (t.offset > data_bytes) {
      return parse_error("tensor data past EOF: " + who + " starts at data offset " + num(t.offset) +
                             " but the data section has " + num(data_bytes) + " bytes", kNoOffset);
    }
    if (!ggml_type_sized(info)) continue;
    const uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
    if (ne0 % info->block_elements != 0) {
      return parse_error(who + " of type " + std::string(info->name) + " has ne[0] = " + num(ne0) +
                             ", not a multiple of the block size " + num(info->block_elements), kNoOffset);
    }
    auto nbytes = ggml_nbytes(*info, t.elements);
    if (!nbytes) return parse_error("the size in bytes of " + who + " overflows", kNoOffset);
    if (*nbytes > data_bytes - t.offset) {
      return parse_error("tensor data past EOF: " + who + " needs " + num(*nbytes) + " bytes at data offset " +
                             num(t.offset) + " but the data section has " + num(data_bytes) + " bytes", kNoOffset);
    }
    t.nbytes = *nbytes;
    t.size_known = true;
  }
  // Tensors of unknown type: their extent runs to the next tensor's offset, or to the end
  // of the file. Nothing can be said when another tensor starts at the same offset.
  std::vector<uint64_t> starts;
  starts.reserve(out.tensors.size());
  for (const auto& t : out.tensors) starts.push_back(t.offset);
  std::sort(starts.begin(), starts.end());
  for (auto& t : out.tensors) {
    if (t.size_known) continue;
    const GgmlTraits* info = ggml_traits(t.type);
    const std::string type_label = info ? std::string(info->name) + " (removed from ggml)" : "id " + num(ggml_id(t.type));
    auto range = std::equal_range(starts.begin(), starts.end(), t.offset);
    if (range.second - range.first > 1) {
      out.warnings.push_back("tensor " + quote(t.name) + " has unknown type " + type_label +
                             " and shares its offset with another tensor: its size is unknown");
      continue;
    }
    const uint64_t next = range.second == starts.end() ? data_bytes : *range.second;
    t.nbytes = next - t.offset;
    t.size_known = true;
    t.size_from_offsets = true;
    out.warnings.push_back("tensor " + quote(t.name) + " has unknown type " + type_label +
                           ": its size is taken from the offsets (" + num(t.nbytes) + " bytes)");
  }
  // No two extents may overlap.
  std::vector<uint32_t> order;
  for (uint32_t k = 0; k < out.tensors.size(); ++k) {
    if (out.tensors[k].size_known) order.push_back(k);
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto& x = out.tensors[a];
    const auto& y = out.tensors[b];
    return x.offset != y.offset ? x.offset < y.offset : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& prev = out.tensors[order[k - 1]];
    const auto& cur = out.tensors[order[k]];
    if (cur.offset < prev.offset + prev.nbytes) {
      return parse_error("tensors " + quote(prev.name) + " (data " + num(prev.offset) + ".." +
                             num(prev.offset + prev.nbytes) + ") and " + quote(cur.name) + " (data " +
                             num(cur.offset) + "..) overlap", kNoOffset);
    }
  }
  return {};
}

Status Parser::read_split(GgufFile& out) {
  const GgufValue* count = out.find("split.count");
  const GgufValue* no = out.find("split.no");
  const GgufValue* tensors = out.find("split.tensors.count");
  if (!count && !no && !tensors) return {};
  auto get = [&](const GgufValue* v, const char* key, uint64_t max, uint64_t& dst) -> Status {
    if (!v) return parse_error(std::string("split metadata without ") + key, kNoOffset);
    auto u = v->as_uint();
    if (!u) {
      return parse_error(std::string(key) + " is not a non-negative integer (type " +
                             std::string(gguf_type_name(v->type)) + ")", kNoOffset);
    }
    if (*u > max) return parse_error(std::string(key) + " is " + num(*u) + ", out of range", kNoOffset);
    dst = *u;
    return {};
  };
  uint64_t c = 0, n = 0, t = 0;
  AMN_TRY(get(count, "split.count", UINT32_MAX, c));
  AMN_TRY(get(no, "split.no", UINT32_MAX, n));
  if (tensors) AMN_TRY(get(tensors, "split.tensors.count", UINT64_MAX, t));
  if (c == 0) return parse_error("split.count is 0", kNoOffset);
  if (n >= c) return parse_error("split.no " + num(n) + " is not below split.count " + num(c), kNoOffset);
  out.split = GgufSplit{static_cast<uint32_t>(n), static_cast<uint32_t>(c), t};
  return {};
}

Result<GgufFile> Parser::run() {
  AMN_ASSIGN(win_, files_.read(file_, 0, std::min(size_, kGgufFirstWindow)));
  if (size_ < 4) {
    return parse_error("file is " + num(size_) + " bytes, too short for the GGUF magic", 0);
  }
  if (std::memcmp(win_.data(), kMagic, 4) != 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", win_[0], win_[1], win_[2], win_[3]);
    return parse_error(std::string("bad magic: expected 'GGUF' (47 47 55 46), found ") + hex, 0);
  }
  GgufFile out;
  pos_ = 4;
  uint64_t version;
  AMN_TRY(read_uint(4, version, "the version"));
  // Like gguf-py and ggml: a version whose low 16 bits are zero was written in the other
  // byte order (no version will reach 65536).
  if ((version & 0xFFFF) == 0) {
    be_ = true;
    version = load(win_.data() + 4, 4, true);
  }
  if (version == 0) return parse_error("bad version 0", 4);
  if (version == 1) {
    return make_error(ErrorCode::unsupported,
                      "gguf: version 1 is not supported (GGUF v1 was replaced by v2 in 2023; only v2 and v3 are read)", 4);
  }
  if (version > 3) {
    return make_error(ErrorCode::unsupported,
                      "gguf: version " + num(version) + " is newer than the versions this reader knows (2 and 3)", 4);
  }
  out.version = static_cast<uint32_t>(version);
  out.big_endian = be_;
  uint64_t n_tensors, n_kv;
  AMN_TRY(read_uint(8, n_tensors, "the tensor count"));
  AMN_TRY(read_uint(8, n_kv, "the KV count"));
  const uint64_t max_kv = std::min(kHardMaxGgufKv, limits_.max_item_count);
  if (n_kv > max_kv) {
    return limit_error("KV count " + num(n_kv) + " is more than the limit of " + num(max_kv), 16);
  }
  const uint64_t max_tensors = std::min(kHardMaxGgufTensors, limits_.max_item_count);
  if (n_tensors > max_tensors) {
    return limit_error("tensor count " + num(n_tensors) + " is more than the limit of " + num(max_tensors), 8);
  }
  const uint64_t remain = size_ - kHeaderFixedBytes;
  if (n_kv * kMinKvBytes > remain) {
    return parse_error("KV count " + num(n_kv) + " needs at least " + num(n_kv * kMinKvBytes) +
                           " bytes but only " + num(remain) + " remain after the header", 16);
  }
  if (n_tensors * kMinTensorInfoBytes > remain - n_kv * kMinKvBytes) {
    return parse_error("tensor count " + num(n_tensors) + " needs at least " + num(n_tensors * kMinTensorInfoBytes) +
                           " bytes of tensor infos but only " + num(remain - n_kv * kMinKvBytes) +
                           " remain after the KVs", 8);
  }
  tensors_total_ = n_tensors;
  AMN_TRY(read_kv_section(n_kv, out));
  AMN_TRY(read_tensor_infos(n_tensors, out));
  AMN_TRY(apply_alignment(out));
  out.header_bytes = pos_;
  const uint64_t padded = sat_add(pos_, out.alignment - 1) / out.alignment * out.alignment;
  out.data_offset = padded;
  AMN_TRY(place_tensors(out));
  AMN_TRY(read_split(out));
  return out;
}

}  // namespace

uint64_t gguf_fixed_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    case GgufType::STRING: case GgufType::ARRAY: return 0;
  }
  return 0;
}

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::UINT8: return "UINT8";
    case GgufType::INT8: return "INT8";
    case GgufType::UINT16: return "UINT16";
    case GgufType::INT16: return "INT16";
    case GgufType::UINT32: return "UINT32";
    case GgufType::INT32: return "INT32";
    case GgufType::FLOAT32: return "FLOAT32";
    case GgufType::BOOL: return "BOOL";
    case GgufType::STRING: return "STRING";
    case GgufType::ARRAY: return "ARRAY";
    case GgufType::UINT64: return "UINT64";
    case GgufType::INT64: return "INT64";
    case GgufType::FLOAT64: return "FLOAT64";
  }
  return "?";
}

std::optional<uint64_t> GgufValue::as_uint() const {
  switch (type) {
    case GgufType::UINT8: case GgufType::UINT16: case GgufType::UINT32: case GgufType::UINT64:
      return u;
    case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64:
      if (i < 0) return std::nullopt;
      return static_cast<uint64_t>(i);
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> GgufValue::as_int() const {
  switch (type) {
    case GgufType::UINT8: case GgufType::UINT16: case GgufType::UINT32: case GgufType::UINT64:
      if (u > uint64_t(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(u);
    case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64:
      return i;
    default:
      return std::nullopt;
  }
}

std::string_view GgufValue::string_at(uint64_t index) const {
  const uint64_t begin = index ? ends[index - 1] : 0;
  return std::string_view(arena).substr(begin, ends[index] - begin);
}

uint64_t GgufValue::uint_at(uint64_t index) const {
  const unsigned n = static_cast<unsigned>(gguf_fixed_size(elem_type));
  return load_le(raw.data() + index * n, n);
}

int64_t GgufValue::int_at(uint64_t index) const {
  const unsigned n = static_cast<unsigned>(gguf_fixed_size(elem_type));
  return sign_extend(load_le(raw.data() + index * n, n), n);
}

double GgufValue::float_at(uint64_t index) const {
  const unsigned n = static_cast<unsigned>(gguf_fixed_size(elem_type));
  return as_double(load_le(raw.data() + index * n, n), n);
}

bool GgufValue::bool_at(uint64_t index) const { return raw[index] != 0; }

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv) {
    if (k == key) return &v;
  }
  return nullptr;
}

Result<GgufFile> parse_gguf(FileSet& files, uint32_t file, const ParseLimits& limits) {
  Parser parser(files, file, limits);
  return parser.run();
}

bool looks_like_gguf(std::span<const uint8_t> head) {
  return head.size() >= 4 && std::memcmp(head.data(), kMagic, 4) == 0;
}

std::optional<GgufSplitName> gguf_split_name(std::string_view name) {
  // <prefix>-NNNNN-of-MMMMM.gguf, as llama.cpp's llama_split_path writes it ("%s-%05d-of-%05d.gguf").
  constexpr std::string_view kSuffix = ".gguf";
  if (name.size() < kSuffix.size() + 15 || name.substr(name.size() - kSuffix.size()) != kSuffix) return std::nullopt;
  const std::string_view core = name.substr(0, name.size() - kSuffix.size());
  const std::string_view tail = core.substr(core.size() - 15);  // -NNNNN-of-MMMMM
  auto digits = [](std::string_view s, uint32_t& v) {
    v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + static_cast<uint32_t>(c - '0');
    }
    return true;
  };
  GgufSplitName out;
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-" || !digits(tail.substr(1, 5), out.no) ||
      !digits(tail.substr(10, 5), out.count)) {
    return std::nullopt;
  }
  if (out.no == 0 || out.count == 0 || out.no > out.count) return std::nullopt;
  out.prefix = std::string(core.substr(0, core.size() - 15));
  return out;
}

}  // namespace amn
