#include "formats/npy/record.h"

#include <algorithm>
#include <map>

#include "core/json.h"

namespace amn::npy {

void fill_record(const Header& h, std::string name, TensorRecord& out, std::vector<std::string>& warnings) {
  out.name = std::move(name);
  out.dtype = h.dtype;
  out.big_endian = h.big_endian;
  out.shape = h.shape;
  out.elements = h.elements;
  // DType has no complex128: (real, imaginary) pairs of F64 are the same bytes, as
  // torch.view_as_real lays them out, so nothing is lost.
  const uint64_t inner = h.complex128 ? 2 : 1;
  if (h.complex128) {
    out.shape.push_back(2);
    out.elements = h.elements * 2;  // data_bytes = elements * 16 fits, so this does
    warnings.push_back("tensor '" + out.name + "' is complex128 (descr '" + h.descr +
                       "'), read as F64 with a trailing dimension of 2 (real, imaginary)");
  }
  if (h.dtype == DType::BF16) {
    warnings.push_back("tensor '" + out.name + "' has descr '" + h.descr +
                       "', a 2-byte void, read as BF16 (the convention of JAX / ml_dtypes)");
  }
  // Column-major element strides; the complex pair stays innermost.
  if (h.fortran_order && h.shape.size() >= 2) {
    uint64_t stride = inner;
    for (uint64_t d : h.shape) {
      out.strides.push_back(stride);
      stride *= std::max<uint64_t>(d, 1);  // bounded by data_bytes, checked in parse_header
    }
    if (h.complex128) out.strides.push_back(1);
  }
}

namespace {

// At most n bytes for a text line, never cutting a UTF-8 sequence.
std::string cut(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t end = n - 3;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

std::string version_list(const std::vector<ArrayNote>& arrays) {
  std::map<std::string, size_t> count;
  for (const auto& a : arrays) ++count[a.version];
  std::string out;
  for (const auto& [v, n] : count) out += (out.empty() ? "" : ", ") + v + " (" + std::to_string(n) + ")";
  return out;
}

void append_note(std::string& o, const ArrayNote& a, bool with_name) {
  o += "{";
  if (with_name) {
    o += "\"name\": ";
    append_json_string(o, a.name);
    o += ", ";
  }
  o += "\"npy_version\": ";
  append_json_string(o, a.version);
  o += ", \"descr\": ";
  append_json_string(o, a.descr);
  o += std::string(", \"fortran_order\": ") + (a.fortran_order ? "true" : "false");
  if (with_name) o += std::string(", \"compressed\": ") + (a.compressed ? "true" : "false");
  o += "}";
}

}  // namespace

std::string npy_details_json(const ArrayNote& a, uint64_t header_bytes) {
  std::string o;
  append_note(o, a, false);
  o.pop_back();
  o += ", \"header_bytes\": " + std::to_string(header_bytes) + "}";
  return o;
}

std::vector<std::pair<std::string, std::string>> npy_details_text(const ArrayNote& a, uint64_t header_bytes) {
  return {{"NumPy", ".npy v" + a.version + ", descr '" + a.descr + "', " + (a.fortran_order ? "Fortran" : "C") +
                        " order, " + std::to_string(header_bytes) + "-byte header"}};
}

std::string npz_details_json(const std::vector<ArrayNote>& arrays, uint64_t entries,
                             const std::vector<std::string>& skipped) {
  const auto compressed = std::count_if(arrays.begin(), arrays.end(), [](const ArrayNote& a) { return a.compressed; });
  std::string o = "{\"entries\": " + std::to_string(entries) + ", \"compressed_entries\": " +
                  std::to_string(compressed) + ", \"arrays\": [";
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (i) o += ", ";
    append_note(o, arrays[i], true);
  }
  o += "], \"skipped_entries\": [";
  for (size_t i = 0; i < skipped.size(); ++i) {
    if (i) o += ", ";
    append_json_string(o, skipped[i]);
  }
  return o + "]}";
}

std::vector<std::pair<std::string, std::string>> npz_details_text(const std::vector<ArrayNote>& arrays, uint64_t entries,
                                                                  const std::vector<std::string>& skipped) {
  const auto compressed = std::count_if(arrays.begin(), arrays.end(), [](const ArrayNote& a) { return a.compressed; });
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("NumPy", ".npz, " + std::to_string(arrays.size()) + " arrays in " + std::to_string(entries) +
                                " entries, " + std::to_string(compressed) + " compressed (DEFLATE)");
  if (!arrays.empty()) out.emplace_back("NPY versions", version_list(arrays));
  std::string fortran;
  for (const auto& a : arrays) {
    if (a.fortran_order) fortran += (fortran.empty() ? "" : ", ") + a.name;
  }
  if (!fortran.empty()) out.emplace_back("Fortran order", cut(fortran, 80));
  if (!skipped.empty()) {
    std::string s;
    for (const auto& n : skipped) s += (s.empty() ? "" : ", ") + n;
    out.emplace_back("skipped entries", cut(s, 80));
  }
  return out;
}

}  // namespace amn::npy
