// NumPy's own files: a standalone .npy array and an .npz archive of them (np.save,
// np.savez, np.savez_compressed). Header-only, sans-IO: reads go through the FileSet and
// may answer need_bytes; array data is never read. Spec and our choices:
// docs/formats/numpy.md.
#pragma once
#include <cstdint>

#include "core/error.h"
#include "core/limits.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

// One .npy file: a Model (format "npy") of one tensor named after the file without
// ".npy". Reads the first 128 bytes, and the rest of the header only when it is longer.
// Errors: parse (magic, malformed header literal, shape overflow, data past EOF),
// unsupported (version, object / structured / other dtypes), limit (header length, rank).
Result<Model> parse_npy(FileSet& files, uint32_t file, const ParseLimits& limits);

// An .npz archive: a Model (format "npz") with one tensor per "*.npy" entry ("a.npy" → "a",
// "dir/x.npy" → "dir/x"); other entries are listed in warnings. Stored entries point at
// the array bytes in the archive; DEFLATE entries (savez_compressed) at the compressed
// data, with TensorRecord::deflated and the inflated layout. Remote: after the ZIP
// central directory, every local header and NPY header comes in one need_bytes round
// (and one more for the rare header longer than 128 bytes).
Result<Model> parse_npz(FileSet& files, uint32_t file, const ParseLimits& limits);

}  // namespace amn
