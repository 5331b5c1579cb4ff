// Executing a plan: each piece reads its input range through the FileSet (sans-IO:
// a SparseSource may answer need_bytes) and runs its kernel into the caller's buffer.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "convert/plan.h"
#include "core/error.h"
#include "core/source.h"

namespace amn {

// The inputs of the last quantized-weight piece, kept for the next one. GPTQ and AWQ
// store a layer transposed, so every piece of rows reads the whole layer (SchemeOp::inputs):
// without this, a layer cut into k pieces is copied k times, and over HTTP (where the
// JS side releases its bytes after each piece) fetched k times.
struct SchemeInputCache {
  std::vector<ByteRange> ranges;
  std::vector<ByteSource::OwnedBytes> taken;  // inputs taken over from the source (WASM: what JS supplied)
  std::vector<std::vector<uint8_t>> copies;   // the others, copied
  std::vector<std::span<const uint8_t>> views;  // one per range, in order
};

// Runs piece `i` into `out` (exactly plan.pieces[i].out_length bytes). With a cache, a
// scheme piece whose inputs are the previous one's reuses them; any other piece empties it.
Status run_piece(const Plan& plan, size_t i, FileSet& files, std::span<uint8_t> out,
                 SchemeInputCache* cache = nullptr);

// A plan with prepares (forget): runs prepare `i` (need_bytes like a piece; the cache
// keeps the source for the pieces that follow), and once all ran, finish_prepared() sets
// the sizes the values decided and rebuilds the header. execute_plan refuses a plan whose
// prepares have not run.
Status run_prepare(const Plan& plan, size_t i, FileSet& files, SchemeInputCache* cache = nullptr);
void finish_prepared(Plan& plan);
Status prepare_plan(Plan& plan, FileSet& files);  // every prepare, then finish_prepared

// Where a conversion's bytes go. The CLI's file sink writes to a temporary file and
// renames it into place; the bindings hand bytes to JS instead.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status write(std::span<const uint8_t> bytes) = 0;
  // Optional: appends `length` bytes of the open file `in_fd` from `offset`, without
  // passing them through user memory (a local file into a local file: the kernel copies
  // page-cache pages; mapping the input instead faults in every page, ~20 us each on
  // some VMs). Returns false when this sink cannot (then nothing was written and the
  // caller writes the bytes itself).
  virtual Result<bool> copy_range(int in_fd, uint64_t offset, uint64_t length) {
    (void)in_fd, (void)offset, (void)length;
    return false;
  }
};

struct ExecuteHooks {
  std::function<void(uint64_t done, uint64_t total)> progress;  // bytes of output
  std::function<bool()> cancelled;
};

// Writes the plan's header then every piece in order. Memory: one piece at a time.
Status execute_plan(const Plan& plan, FileSet& files, Sink& sink, const ExecuteHooks& hooks = {});

}  // namespace amn
