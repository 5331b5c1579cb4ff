// llama.cpp's importance matrices (`llama-imatrix` output, read by `llama-quantize
// --imatrix`): the GGUF form (tensors `<weight>.in_sum2` and `<weight>.counts`, KVs
// imatrix.datasets / chunk_count / chunk_size) and the legacy `.dat` form. Parsed as
// llama.cpp reads them (common/imatrix-loader.cpp, common_imatrix_load, and
// tools/quantize/quantize.cpp, load_imatrix, ngxson/llama.cpp at the commit named in
// kernels/ggml/blocks.h), down to the values llama-quantize hands the encoders.
// Hostile input: every length is checked against the bytes left and the limits; where
// llama.cpp would crash or abort (a negative length, no counts, a chunk count that is not
// UINT32) this refuses with a parse error. Format notes: docs/formats/imatrix.md.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"

namespace amn {

struct ImportanceMatrix {
  // Per weight name, the values llama-quantize passes to ggml_quantize_chunk: for the GGUF
  // form in_sum2 / counts per expert (ne0 values per expert, ones for an expert with no
  // count), for the legacy form the stored values / ncall.
  std::map<std::string, std::vector<float>> entries;
  std::vector<std::string> datasets;  // the files it was computed on
  int32_t chunk_count = 0;            // imatrix.chunk_count, or the legacy trailer's
  bool legacy = false;
};

// Parses `bytes` as llama-quantize does: a file that starts with the GGUF magic as the
// GGUF form, anything else as the legacy form. Errors: parse (with the offset) for a
// malformed file and for what llama-quantize refuses (no entries, a GGUF form without the
// imatrix.* metadata, sums without counts, non-F32 tensors), limit past `limits`,
// unsupported for a big-endian GGUF (ggml reads none).
Result<ImportanceMatrix> parse_imatrix(std::span<const uint8_t> bytes, const ParseLimits& limits);

}  // namespace amn
