#include "formats/safetensors/parse.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <vector>

#include <simdjson.h>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/json_syntax.h"
#include "core/text.h"

namespace amn {
namespace {

Error header_error(std::string message, uint64_t offset = 8) {
  return make_error(ErrorCode::parse, "safetensors: " + std::move(message), offset);
}

// Reads a non-negative JSON integer (shape dims and offsets are usize in the reference).
bool get_uint(simdjson::dom::element e, uint64_t& out) {
  if (e.is_uint64()) return !e.get_uint64().get(out);
  if (e.is_int64()) {
    int64_t v;
    if (e.get_int64().get(v) || v < 0) return false;
    out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

Status parse_tensor(std::string_view name, simdjson::dom::element value, uint64_t data_start,
                    uint32_t file, TensorRecord& out) {
  simdjson::dom::object obj;
  if (value.get_object().get(obj)) {
    return header_error("tensor entry is not an object (" + quote(name) + ")");
  }
  out.name = std::string(name);
  out.file = file;
  bool have_dtype = false, have_shape = false, have_offsets = false;
  uint64_t begin = 0, end = 0;
  for (auto field : obj) {
    // Each key compared once (this loop runs for every tensor of a header).
    enum Key { dtype, shape, data_offsets, other };
    const Key key = field.key == "dtype" ? dtype : field.key == "shape" ? shape
                    : field.key == "data_offsets" ? data_offsets : other;
    if ((key == dtype && have_dtype) || (key == shape && have_shape) || (key == data_offsets && have_offsets)) {
      return header_error("duplicate field " + quote(field.key) + " in tensor " + quote(name));
    }
    if (key == dtype) {
      std::string_view s;
      if (field.value.get_string().get(s)) {
        return header_error("unknown dtype for tensor " + quote(name) + ": not a string");
      }
      auto dt = dtype_from_name(s);
      if (!dt) return header_error("unknown dtype \"" + std::string(s.substr(0, 40)) + "\" for tensor " + quote(name));
      out.dtype = *dt;
      have_dtype = true;
    } else if (key == shape) {
      simdjson::dom::array arr;
      if (field.value.get_array().get(arr)) {
        return header_error("invalid shape for tensor " + quote(name) + ": not an array");
      }
      out.shape.clear();
      for (auto d : arr) {
        uint64_t dim;
        if (!get_uint(d, dim)) {
          return header_error("invalid shape for tensor " + quote(name) + ": a dimension is not a non-negative integer");
        }
        if (out.shape.size() >= kHardMaxDims) {
          return make_error(ErrorCode::limit, "safetensors: tensor " + quote(name) + " has too many dimensions (more than " + std::to_string(kHardMaxDims) + ")", 8);
        }
        out.shape.push_back(dim);
      }
      have_shape = true;
    } else if (key == data_offsets) {
      simdjson::dom::array arr;
      if (field.value.get_array().get(arr) || arr.size() != 2 || !get_uint(arr.at(0).value_unsafe(), begin) ||
          !get_uint(arr.at(1).value_unsafe(), end)) {
        return header_error("invalid data_offsets for tensor " + quote(name) + ": must be two non-negative integers");
      }
      have_offsets = true;
    }
    // Other keys are ignored, as serde does for the reference's TensorInfo.
  }
  if (!have_dtype) return header_error("missing dtype for tensor " + quote(name));
  if (!have_shape) return header_error("missing shape for tensor " + quote(name));
  if (!have_offsets) return header_error("missing data_offsets for tensor " + quote(name));
  if (end < begin) {
    return header_error("data_offsets of tensor " + quote(name) + " end before begin (" +
                        std::to_string(begin) + " > " + std::to_string(end) + ")");
  }
  uint64_t elements = 1;
  for (uint64_t d : out.shape) {
    auto m = checked_mul(elements, d);
    if (!m) return header_error("element count of tensor " + quote(name) + " overflows 64 bits");
    elements = *m;
  }
  out.elements = elements;
  auto nbytes = dtype_nbytes(out.dtype, elements);
  if (!nbytes) return header_error("tensor " + quote(name) + ": " + nbytes.error().message);
  if (*nbytes != end - begin) {
    return header_error("size mismatch: tensor " + quote(name) + " spans " + std::to_string(end - begin) +
                        " bytes but its dtype and shape need " + std::to_string(*nbytes) +
                        " (" + std::string(dtype_name(out.dtype)) + ", " + std::to_string(elements) +
                        " elements)");
  }
  out.nbytes = *nbytes;
  auto abs = checked_add(data_start, begin);
  if (!abs || !checked_add(data_start, end)) {
    return header_error("data_offsets of tensor " + quote(name) + " overflow");
  }
  out.offset = *abs;
  return {};
}

// The duplicate-name check: an open-addressing table (linear probing, at most half full)
// of each name's hash and its index in `names_`. std::unordered_set allocated a node per
// name: 8 % of opening a 1,000-tensor header in Node (docs/benchmarks.md, "Small opens:
// plain models skip scheme detection"). `n`, the table's bound, is the object's entry
// count, already checked against max_item_count.
class NameSet {
 public:
  explicit NameSet(size_t n) {
    size_t capacity = 16;
    while (capacity < 2 * n) capacity *= 2;
    slots_.assign(capacity, Slot{0, kEmpty});
    mask_ = capacity - 1;
    names_.reserve(n);
  }
  // False when `name` is in the set already.
  bool insert(std::string_view name) {
    const size_t hash = std::hash<std::string_view>{}(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.index == kEmpty) {
        slot = Slot{hash, static_cast<uint32_t>(names_.size())};
        names_.push_back(name);
        return true;
      }
      if (slot.hash == hash && names_[slot.index] == name) return false;
    }
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  struct Slot {
    size_t hash;
    uint32_t index;
  };
  std::vector<Slot> slots_;
  std::vector<std::string_view> names_;
  size_t mask_ = 0;
};

}  // namespace

bool looks_like_safetensors(std::span<const uint8_t> head, uint64_t file_size) {
  if (head.size() < 9 || file_size < 9) return false;
  const uint64_t n = load_le64(head.data());
  if (n == 0 || n > file_size - 8) return false;
  return head[8] == '{';
}

Result<SafetensorsHeader> parse_safetensors(FileSet& files, uint32_t file,
                                            const ParseLimits& requested) {
  const ParseLimits limits = effective_limits(requested);
  const uint64_t size = files.size(file);
  if (size < 8) {
    return make_error(ErrorCode::parse, "safetensors: file is " + std::to_string(size) +
                                            " bytes, shorter than 8 bytes (the header length prefix)", 0);
  }
  // Ask for a generous first window, so most headers arrive in one round trip.
  AMN_ASSIGN(auto head, files.read(file, 0, std::min(size, kSafetensorsReadAhead)));
  const uint64_t n = load_le64(head.data());
  // A length that cannot fit the file is not a header at all (most often the file is
  // something else under a .safetensors name); a plausible one above the format's
  // maximum is a limit.
  if (n > size - 8) {
    return make_error(ErrorCode::parse,
                      "safetensors: not a safetensors file: its first 8 bytes, read as the header length, say " +
                          std::to_string(n) + " bytes, but only " + std::to_string(size - 8) +
                          " bytes follow them", 0);
  }
  if (n > kHardMaxSafetensorsHeader) {
    return make_error(ErrorCode::limit,
                      "safetensors: header too large: length " + std::to_string(n) +
                          " exceeds the format's maximum of 100000000 bytes", 0);
  }
  if (n > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, "safetensors: header length " + std::to_string(n) +
                                            " exceeds max_single_alloc", 0);
  }
  if (n < 2) return header_error("header of " + std::to_string(n) + " bytes is not a JSON object");
  MemoryBudget budget(limits, "safetensors");
  AMN_TRY(budget.charge(n, "the header text", 8));
  AMN_TRY(budget.charge(n * kJsonDomBytesPerByte, "the JSON parser's tape for the header", 8));
  AMN_ASSIGN(auto text, files.read(file, 8, n));
  if (text[0] != '{') return header_error("header is not a JSON object (it does not start with '{')");

  simdjson::dom::parser parser;
  // Tensor entries nest 3 deep; anything deeper than this is not a safetensors header.
  if (parser.allocate(n, 16)) return make_error(ErrorCode::limit, "safetensors: cannot allocate the JSON parser");
  simdjson::dom::element root;
  if (auto err = parser.parse(text.data(), text.size(), /*realloc_if_needed=*/true).get(root)) {
    if (err == simdjson::DEPTH_ERROR) {
      return make_error(ErrorCode::limit, "safetensors: header JSON nests too deep (more than 16 levels)", 8);
    }
    uint64_t at = 8;  // the header's start when the fault has no position
    const std::string why =
        describe_json_error(err, std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), 8, at);
    return header_error("invalid JSON in header: " + why, at);
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return header_error("header is not a JSON object");
  if (obj.size() > limits.max_item_count) {
    return make_error(ErrorCode::limit, "safetensors: header lists more than " +
                                            std::to_string(limits.max_item_count) + " entries", 8);
  }

  SafetensorsHeader out;
  out.header_bytes = 8 + n;
  NameSet seen(obj.size());
  out.tensors.reserve(obj.size());
  for (auto field : obj) {
    if (!seen.insert(field.key)) {
      if (field.key == "__metadata__") return header_error("duplicate __metadata__ entry");
      return header_error("duplicate tensor name " + quote(field.key));
    }
    if (field.key.size() > kHardMaxNameBytes) {
      return make_error(ErrorCode::limit, "safetensors: tensor name too long (more than 64 KiB)", 8);
    }
    if (field.key == "__metadata__") {
      if (field.value.is_null()) continue;  // serde reads a null Option as absent
      simdjson::dom::object meta;
      if (field.value.get_object().get(meta)) return header_error("__metadata__ is not an object");
      std::unordered_set<std::string_view> keys;
      for (auto kv : meta) {
        if (!keys.insert(kv.key).second) return header_error("duplicate metadata key " + quote(kv.key));
        std::string_view v;
        if (kv.value.get_string().get(v)) {
          return header_error("__metadata__ value is not a string (key " + quote(kv.key) + ")");
        }
        AMN_TRY(budget.charge(sizeof(out.metadata[0]) + kv.key.size() + v.size(), "the metadata", 8));
        out.metadata.emplace_back(std::string(kv.key), std::string(v));
      }
      continue;
    }
    TensorRecord rec;
    AMN_TRY(parse_tensor(field.key, field.value, out.header_bytes, file, rec));
    // The label is written only when the charge fails: quoting every name cost a small
    // header's open more than parsing its JSON did (profiled in Node, docs/benchmarks.md).
    const uint64_t rec_bytes = sizeof(TensorRecord) + rec.name.size() + rec.shape.size() * sizeof(uint64_t);
    AMN_TRY(budget.charge(rec_bytes, rec_bytes > budget.remaining() ? "tensor " + quote(rec.name) : std::string(), 8));
    out.tensors.push_back(std::move(rec));
  }

  // The data section must be covered exactly: contiguous from 0, no holes, no overlaps.
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const TensorRecord& a, const TensorRecord& b) {
              return a.offset != b.offset ? a.offset < b.offset : a.nbytes < b.nbytes;
            });
  uint64_t pos = out.header_bytes;
  const TensorRecord* prev = nullptr;
  for (const auto& t : out.tensors) {
    if (t.offset > pos) {
      if (!prev) {
        return header_error("hole before the first tensor " + quote(t.name) + ": it starts at data offset " +
                            std::to_string(t.offset - out.header_bytes) + ", not 0");
      }
      return header_error("hole in the data section between " + quote(prev->name) + " (ends at " +
                          std::to_string(pos - out.header_bytes) + ") and " + quote(t.name) +
                          " (starts at " + std::to_string(t.offset - out.header_bytes) + ")");
    }
    if (t.offset < pos) {
      return header_error("tensors " + quote(prev ? prev->name : std::string_view("?")) + " and " +
                          quote(t.name) + " overlap");
    }
    pos = t.offset + t.nbytes;
    prev = &t;
  }
  if (pos != size) {
    const uint64_t data = size - out.header_bytes, covered = pos - out.header_bytes;
    if (covered < data) {
      return header_error("data section has " + std::to_string(data) + " bytes but the tensors cover only " +
                          std::to_string(covered) + " (trailing bytes)", pos);
    }
    return header_error("tensors need " + std::to_string(covered) + " data bytes but the file holds only " +
                        std::to_string(data) + " (truncated)", size);
  }
  return out;
}

}  // namespace amn
