// What .npy and .npz share: a parsed NPY header turned into a TensorRecord, and the
// description of the NPY headers for the model-info document.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "formats/npy/header.h"

namespace amn::npy {

// Fills name, dtype, byte order, shape (complex128 gets a trailing dimension of 2),
// element count and Fortran-order strides; the caller places it (file, offset, nbytes,
// DEFLATE fields). Warnings that concern the dtype go to `warnings`.
void fill_record(const Header& h, std::string name, TensorRecord& out, std::vector<std::string>& warnings);

// One parsed array, for details_json / details_text.
struct ArrayNote {
  std::string name;
  std::string version;  // "1.0"
  std::string descr;
  bool fortran_order = false;
  bool compressed = false;
};

std::string npy_details_json(const ArrayNote& a, uint64_t header_bytes);
std::vector<std::pair<std::string, std::string>> npy_details_text(const ArrayNote& a, uint64_t header_bytes);
std::string npz_details_json(const std::vector<ArrayNote>& arrays, uint64_t entries,
                             const std::vector<std::string>& skipped);
std::vector<std::pair<std::string, std::string>> npz_details_text(const std::vector<ArrayNote>& arrays, uint64_t entries,
                                                                  const std::vector<std::string>& skipped);

}  // namespace amn::npy
