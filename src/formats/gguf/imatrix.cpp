#include "formats/gguf/imatrix.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/source.h"
#include "formats/gguf/parse.h"

namespace amn {
namespace {

constexpr const char* kWho = "imatrix";

Error parse_error(std::string message, uint64_t offset = kNoOffset) {
  return make_error(ErrorCode::parse, std::string(kWho) + ": " + std::move(message), offset);
}

float load_f32_le(const uint8_t* p) {
  const uint32_t bits = load_le32(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The values of one weight, checked against the limits before they are allocated.
Status charge_values(MemoryBudget& budget, const ParseLimits& limits, uint64_t count, const std::string& name,
                     uint64_t offset) {
  const uint64_t bytes = checked_mul(count, 4).value_or(UINT64_MAX);
  if (bytes > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, std::string(kWho) + ": '" + name + "' has " + std::to_string(count) +
                                            " values, more than max_single_alloc allows", offset);
  }
  return budget.charge(bytes, "the values of '" + name + "'", offset);
}

// A little-endian reader over the whole file, as llama.cpp's ifstream reads the legacy
// form; `take` is false (and reads nothing) when fewer than `n` bytes remain.
struct Reader {
  std::span<const uint8_t> bytes;
  uint64_t at = 0;
  uint64_t left() const { return bytes.size() - at; }
  bool take(uint64_t n, const uint8_t*& p) {
    if (n > left()) return false;
    p = bytes.data() + at;
    at += n;
    return true;
  }
  bool i32(int32_t& out) {
    const uint8_t* p = nullptr;
    if (!take(4, p)) return false;
    out = static_cast<int32_t>(load_le32(p));
    return true;
  }
};

// common_imatrix_load_legacy, then load_imatrix's legacy branch (values / ncall).
Result<ImportanceMatrix> parse_legacy(std::span<const uint8_t> bytes, const ParseLimits& limits) {
  ImportanceMatrix out;
  out.legacy = true;
  MemoryBudget budget(limits, kWho);
  Reader r{bytes};
  int32_t n_entries = 0;
  if (!r.i32(n_entries) || n_entries < 1) return parse_error("no data (the entry count is missing or below 1)", 0);
  if (static_cast<uint64_t>(n_entries) > limits.max_item_count) {
    return make_error(ErrorCode::limit, std::string(kWho) + ": " + std::to_string(n_entries) + " entries, more than max_item_count", 0);
  }
  for (int32_t i = 0; i < n_entries; ++i) {
    const uint64_t entry_at = r.at;
    int32_t len = 0;
    const uint8_t* name_bytes = nullptr;
    if (!r.i32(len) || len < 0 || static_cast<uint64_t>(len) > kHardMaxNameBytes || !r.take(static_cast<uint64_t>(len), name_bytes)) {
      return parse_error("failed reading the name of entry " + std::to_string(i + 1), entry_at);
    }
    // std::string{vector.data()}: the name ends at its first NUL.
    std::string name(reinterpret_cast<const char*>(name_bytes), static_cast<size_t>(len));
    name.resize(std::strlen(name.c_str()));
    int32_t ncall = 0, nval = 0;
    if (!r.i32(ncall) || !r.i32(nval) || nval < 1) {
      return parse_error("failed reading the number of values of entry " + std::to_string(i + 1), entry_at);
    }
    if (static_cast<uint64_t>(nval) * 4 > r.left()) {
      return parse_error("failed reading the values of entry " + std::to_string(i + 1) + " ('" + name + "': " +
                             std::to_string(nval) + " floats, " + std::to_string(r.left()) + " bytes left)", r.at);
    }
    AMN_TRY(charge_values(budget, limits, static_cast<uint64_t>(nval), name, r.at));
    const uint8_t* p = nullptr;
    r.take(static_cast<uint64_t>(nval) * 4, p);
    std::vector<float> values(static_cast<size_t>(nval));
    // load_imatrix: "sums contain (raw/count)*ncall, divide by ncall" (float / int64 is a
    // float division); ncall <= 0 keeps the values.
    for (size_t k = 0; k < values.size(); ++k) {
      const float v = load_f32_le(p + 4 * k);
      values[k] = ncall > 0 ? v / static_cast<float>(static_cast<int64_t>(ncall)) : v;
    }
    out.entries[std::move(name)] = std::move(values);  // a repeated name: the last one wins, as in llama.cpp's map
  }
  // The optional trailer: the chunk count, then the dataset's name. ifstream::read keeps
  // the bytes it got when fewer than asked remain, so a short chunk count is those bytes.
  if (r.left() > 0) {
    uint8_t count[4] = {0, 0, 0, 0};
    const uint64_t n = std::min<uint64_t>(4, r.left());
    std::memcpy(count, bytes.data() + r.at, n);
    r.at += n;
    out.chunk_count = static_cast<int32_t>(load_le32(count));
    int32_t len = 0;
    const uint8_t* name_bytes = nullptr;
    if (n == 4 && r.i32(len) && len > 0 && r.take(static_cast<uint64_t>(len), name_bytes)) {
      std::string dataset(reinterpret_cast<const char*>(name_bytes), static_cast<size_t>(len));
      dataset.resize(std::strlen(dataset.c_str()));
      AMN_TRY(budget.charge(dataset.size(), "the dataset name"));
      out.datasets.push_back(std::move(dataset));
    }
  }
  return out;
}

// std::lround on x86-64: a value out of long's range (or NaN) gives LONG_MIN.
int64_t lround_x86(float x) {
  if (!(std::fabs(x) < 9.2e18f)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::lround(x));
}

// common_imatrix_load (GGUF branch), then load_imatrix's division by the counts.
Result<ImportanceMatrix> parse_gguf_form(std::span<const uint8_t> bytes, const ParseLimits& limits) {
  FileSet set;
  set.add("imatrix.gguf", std::make_unique<MemorySource>(bytes));
  auto parsed = parse_gguf(set, 0, limits);
  if (!parsed) {
    Error e = parsed.error();
    e.message = std::string(kWho) + ": " + e.message;
    return e;
  }
  const GgufFile& g = *parsed;
  if (g.big_endian) return make_error(ErrorCode::unsupported, std::string(kWho) + ": a big-endian GGUF (ggml reads none)");
  if (g.tensors.empty()) return parse_error("no data (the GGUF has no tensors)");
  ImportanceMatrix out;
  MemoryBudget budget(limits, kWho);
  const GgufValue* datasets = g.find("imatrix.datasets");
  const GgufValue* chunk_count = g.find("imatrix.chunk_count");
  const GgufValue* chunk_size = g.find("imatrix.chunk_size");
  if (datasets && datasets->type == GgufType::ARRAY && datasets->elem_type == GgufType::STRING) {
    for (uint64_t i = 0; i < datasets->count; ++i) out.datasets.emplace_back(datasets->string_at(i));
  }
  // load_imatrix refuses a GGUF without the three keys ("missing imatrix metadata").
  if (!datasets || !chunk_count || !chunk_size) {
    return parse_error("missing imatrix metadata (imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size)");
  }
  // gguf_get_val_u32 asserts the type: ggml aborts on anything but UINT32.
  for (const GgufValue* v : {chunk_count, chunk_size}) {
    if (v->type != GgufType::UINT32) {
      return parse_error(std::string(v == chunk_count ? "imatrix.chunk_count" : "imatrix.chunk_size") + " is " +
                         std::string(gguf_type_name(v->type)) + ", not UINT32");
    }
  }
  out.chunk_count = static_cast<int32_t>(static_cast<uint32_t>(chunk_count->u));

  struct Pair {
    const GgufTensorInfo* sums = nullptr;
    const GgufTensorInfo* counts = nullptr;
  };
  std::map<std::string, Pair> pairs;
  auto strip = [](std::string_view name, std::string_view suffix, std::string& base) {
    if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) return false;
    base = std::string(name.substr(0, name.size() - suffix.size()));
    return true;
  };
  for (const GgufTensorInfo& t : g.tensors) {
    std::string base;
    if (t.name.empty()) continue;
    if (strip(t.name, ".in_sum2", base)) pairs[base].sums = &t;
    else if (strip(t.name, ".counts", base)) pairs[base].counts = &t;
  }
  for (const auto& [name, pair] : pairs) {
    if (!pair.sums || !pair.counts) return parse_error("mismatched sums and counts for '" + name + "'");
    if (pair.sums->type != GgmlType::F32 || pair.counts->type != GgmlType::F32) {
      return parse_error("sums and counts for '" + name + "' must be F32");
    }
    const uint64_t nval = pair.sums->elements, ncounts = pair.counts->elements;
    // llama.cpp divides by the number of counts: none would crash it.
    if (ncounts == 0) return parse_error("'" + name + "' has no counts");
    AMN_TRY(charge_values(budget, limits, checked_add(nval, ncounts).value_or(UINT64_MAX), name, g.data_offset + pair.sums->offset));
    const uint8_t* sums = bytes.data() + g.data_offset + pair.sums->offset;
    const uint8_t* counts = bytes.data() + g.data_offset + pair.counts->offset;
    std::vector<float> values(nval, 0.0f);  // values past ncounts * ne0 stay 0, as there
    const uint64_t ne0 = nval / ncounts;
    for (uint64_t j = 0; j < ncounts; ++j) {
      const float count = static_cast<float>(lround_x86(load_f32_le(counts + 4 * j)));
      for (uint64_t i = 0; i < ne0; ++i) {
        values[j * ne0 + i] = count > 0.0f ? load_f32_le(sums + 4 * (j * ne0 + i)) / count : 1.0f;
      }
    }
    out.entries[name] = std::move(values);
  }
  return out;
}

}  // namespace

Result<ImportanceMatrix> parse_imatrix(std::span<const uint8_t> bytes, const ParseLimits& requested) {
  const ParseLimits limits = effective_limits(requested);
  if (looks_like_gguf(bytes)) return parse_gguf_form(bytes, limits);
  return parse_legacy(bytes, limits);
}

}  // namespace amn
