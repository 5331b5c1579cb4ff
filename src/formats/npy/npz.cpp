#include <algorithm>

#include "core/text.h"
#include "formats/npy/header.h"
#include "formats/npy/npy.h"
#include "formats/npy/record.h"
#include "formats/zip/zip.h"

namespace amn {

namespace {

// Errors name the entry; offsets inside an inflated entry mean nothing in the file, so
// those errors point at the entry's data.
Error in_entry(const zip::Entry& e, Error err) {
  if (err.code == ErrorCode::need_bytes || err.code == ErrorCode::need_files) return err;
  std::string_view msg = err.message;
  if (msg.substr(0, 5) == "npy: ") msg.remove_prefix(5);
  err.message = "npz: entry " + quote(e.name) + ": " + std::string(msg);
  if (e.method != zip::Method::stored) err.offset = e.data_offset;
  return err;
}

struct Parsed {
  npy::Header header;
  TensorRecord record;
};

// The first n bytes of an entry's contents (n <= its uncompressed size).
Result<std::vector<uint8_t>> entry_prefix(FileSet& files, uint32_t file, const zip::Entry& e, uint64_t n,
                                          const ParseLimits& limits) {
  if (e.method == zip::Method::stored) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    AMN_TRY(files.read_into(file, e.data_offset, bytes));  // pread on a local file: no page fault
    return bytes;
  }
  return zip::read_prefix(files, file, e, n, limits);
}

Status read_entry(FileSet& files, uint32_t file, const zip::Entry& e, const ParseLimits& limits,
                  MemoryBudget& budget, Parsed& out) {
  if (e.method != zip::Method::stored && e.method != zip::Method::deflate) {
    return make_error(ErrorCode::unsupported,
                      "compression method " + std::to_string(static_cast<unsigned>(e.method)) +
                          " is not supported (NumPy writes stored and DEFLATE entries)", e.local_header_offset);
  }
  const uint64_t size = e.uncompressed_size;
  if (e.method == zip::Method::stored && e.compressed_size != size) {
    return make_error(ErrorCode::parse, "a stored entry's compressed size " + std::to_string(e.compressed_size) +
                                            " differs from its size " + std::to_string(size), e.local_header_offset);
  }
  AMN_ASSIGN(auto bytes, entry_prefix(files, file, e, std::min(size, npy::kFirstRead), limits));
  AMN_ASSIGN(const npy::Preamble pre, npy::read_preamble(bytes, e.data_offset, size));
  if (pre.text_bytes > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, "npy: header of " + std::to_string(pre.text_bytes) +
                                            " bytes exceeds max_single_alloc", e.data_offset + 8);
  }
  AMN_TRY(budget.charge(pre.total() + sizeof(TensorRecord) + e.name.size(), "the header of entry " + quote(e.name),
                        e.data_offset));
  if (pre.total() > bytes.size()) {
    AMN_ASSIGN(bytes, entry_prefix(files, file, e, pre.total(), limits));
  }
  AMN_ASSIGN(out.header, npy::parse_header(bytes, pre, e.data_offset));
  const npy::Header& h = out.header;
  if (h.data_bytes > size - pre.total()) {
    return make_error(ErrorCode::parse,
                      "data past the entry: the array needs " + std::to_string(h.data_bytes) + " bytes after its " +
                          std::to_string(pre.total()) + "-byte header but the entry holds " + std::to_string(size) +
                          " bytes",
                      e.data_offset + std::min(size, pre.total()));
  }
  if (e.data_offset > files.size(file) || e.compressed_size > files.size(file) - e.data_offset) {
    return make_error(ErrorCode::parse, "the entry's data runs past the end of the archive", e.data_offset);
  }
  TensorRecord& r = out.record;
  r.file = file;
  if (e.method == zip::Method::stored) {
    r.offset = e.data_offset + pre.total();
    r.nbytes = h.data_bytes;
  } else {
    r.offset = e.data_offset;
    r.nbytes = e.compressed_size;
    r.deflated = true;
    r.inflated_size = size;
    r.inflated_skip = pre.total();
    r.crc32 = e.crc32;
  }
  return {};
}

}  // namespace

Result<Model> parse_npz(FileSet& files, uint32_t file, const ParseLimits& requested) {
  const ParseLimits limits = effective_limits(requested);
  // The NPY headers come with the local headers: usually no further round.
  AMN_ASSIGN(const zip::Archive archive, zip::read_archive(files, file, limits, npy::kFirstRead));
  Model model;
  model.format = ModelFormat::npz;
  for (uint32_t i = 0; i <= file; ++i) model.files.push_back({files.name(i), files.size(i), 0});
  std::vector<std::string> skipped;
  std::vector<npy::ArrayNote> notes;
  std::vector<ByteRange> need;
  std::vector<std::string> dtype_warnings, trailing;
  MemoryBudget budget(limits, "npz", archive.memory);
  for (const zip::Entry& e : archive.entries) {
    if (!e.name.ends_with(".npy") || e.name.size() == 4 || e.name.ends_with("/.npy")) {
      skipped.push_back(e.name);
      continue;
    }
    Parsed p;
    auto st = read_entry(files, file, e, limits, budget, p);
    if (!st) {
      // Every entry is tried before asking, so one round fetches every missing header.
      if (st.error().code != ErrorCode::need_bytes) return in_entry(e, std::move(st).error());
      need.insert(need.end(), st.error().need_bytes.begin(), st.error().need_bytes.end());
      continue;
    }
    npy::fill_record(p.header, e.name.substr(0, e.name.size() - 4), p.record, dtype_warnings);
    if (e.uncompressed_size - p.header.preamble.total() > p.header.data_bytes) {
      trailing.push_back("entry " + quote(e.name) + " has " +
                         std::to_string(e.uncompressed_size - p.header.preamble.total() - p.header.data_bytes) +
                         " bytes after the array data; they are ignored");
    }
    notes.push_back({p.record.name, npy::version_text(p.header.preamble), p.header.descr, p.header.fortran_order,
                     p.record.deflated});
    model.tensors.push_back(std::move(p.record));
  }
  if (!need.empty()) {
    Error err = make_error(ErrorCode::need_bytes, "npz: NPY headers not yet available");
    err.need_bytes = coalesce_ranges(std::move(need));
    return err;
  }
  std::stable_sort(model.tensors.begin(), model.tensors.end(),
                   [](const TensorRecord& a, const TensorRecord& b) { return a.offset < b.offset; });
  for (auto& w : dtype_warnings) model.warnings.push_back(std::move(w));
  for (auto& w : trailing) model.warnings.push_back(std::move(w));
  for (const auto& name : skipped) {
    model.warnings.push_back("entry " + quote(name) + " is not an .npy array; skipped");
  }
  model.details_json = npy::npz_details_json(notes, archive.entries.size(), skipped);
  model.details_text = npy::npz_details_text(notes, archive.entries.size(), skipped);
  return model;
}

}  // namespace amn
