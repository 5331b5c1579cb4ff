#include "formats/npy/npy.h"

#include <algorithm>

#include "formats/npy/header.h"
#include "formats/npy/record.h"

namespace amn {

namespace {

std::string tensor_name(const std::string& file_name) {
  std::string name = file_name.substr(file_name.find_last_of('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
  return name;
}

}  // namespace

Result<Model> parse_npy(FileSet& files, uint32_t file, const ParseLimits& requested) {
  const ParseLimits limits = effective_limits(requested);
  const uint64_t size = files.size(file);
  AMN_ASSIGN(auto bytes, files.read(file, 0, std::min(size, npy::kFirstRead)));
  AMN_ASSIGN(const npy::Preamble pre, npy::read_preamble(bytes, 0, size));
  if (pre.text_bytes > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, "npy: header of " + std::to_string(pre.text_bytes) +
                                            " bytes exceeds max_single_alloc", 8);
  }
  MemoryBudget budget(limits, "npy");
  AMN_TRY(budget.charge(pre.total(), "the header text", 8));
  if (pre.total() > bytes.size()) {
    AMN_ASSIGN(bytes, files.read(file, 0, pre.total()));
  }
  AMN_ASSIGN(const npy::Header h, npy::parse_header(bytes, pre, 0));
  AMN_TRY(budget.charge(sizeof(TensorRecord) + h.shape.size() * 2 * sizeof(uint64_t), "the array's record", 8));
  const uint64_t data_at = pre.total();
  if (h.data_bytes > size - data_at) {
    return make_error(ErrorCode::parse,
                      "npy: data past EOF: the array needs " + std::to_string(h.data_bytes) + " bytes at offset " +
                          std::to_string(data_at) + " but the file has " + std::to_string(size - data_at) +
                          " after the header",
                      size);
  }

  Model model;
  model.format = ModelFormat::npy;
  for (uint32_t i = 0; i <= file; ++i) model.files.push_back({files.name(i), files.size(i), 0});
  model.files[file].header_bytes = data_at;
  TensorRecord r;
  npy::fill_record(h, tensor_name(files.name(file)), r, model.warnings);
  r.file = file;
  r.offset = data_at;
  r.nbytes = h.data_bytes;
  if (size - data_at > h.data_bytes) {
    // NumPy's reader ignores them too; they are reported, not read.
    model.warnings.push_back(std::to_string(size - data_at - h.data_bytes) +
                             " bytes follow the array data and are ignored");
  }
  const npy::ArrayNote note{r.name, npy::version_text(pre), h.descr, h.fortran_order, false};
  model.tensors.push_back(std::move(r));
  model.details_json = npy::npy_details_json(note, data_at);
  model.details_text = npy::npy_details_text(note, data_at);
  return model;
}

}  // namespace amn
