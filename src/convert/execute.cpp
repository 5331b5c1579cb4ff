#include "convert/execute.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "convert/gather.h"
#include "formats/safetensors/write.h"
#include "core/limits.h"
#include "formats/zip/zip.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"

namespace amn {
namespace {

constexpr uint64_t kMaxStagedInput = 2 * kMaxPieceBytes;

// Inflate (a DEFLATE entry), then swap to little-endian, then gather into row-major order,
// then copy or cast: each step only when the piece needs it.
Status run_gather(const Piece& p, const ParseLimits& requested, std::span<const uint8_t> in, std::span<uint8_t> out) {
  std::vector<uint8_t> inflated;
  if (p.inflated_size > 0) {
    const ParseLimits limits = effective_limits(requested);
    if (p.inflated_size > limits.max_single_alloc) {
      return make_error(ErrorCode::limit, "a compressed entry inflates to " + std::to_string(p.inflated_size) +
                                              " bytes, above max_single_alloc");
    }
    inflated.resize(static_cast<size_t>(p.inflated_size));
    AMN_TRY(zip::inflate_all(in, inflated, p.crc32, limits));
    in = std::span<const uint8_t>(inflated).subspan(static_cast<size_t>(p.inflated_skip));
  }
  const size_t el = dtype_info(p.from).block_bytes;
  std::vector<uint8_t> swapped;
  if (p.swap_width > 1) {
    swapped.assign(in.begin(), in.end());
    for (size_t at = 0; at + p.swap_width <= swapped.size(); at += p.swap_width) {
      std::reverse(swapped.begin() + at, swapped.begin() + at + p.swap_width);
    }
    in = swapped;
  }
  std::vector<uint8_t> gathered;
  const uint8_t* elements = in.data();
  if (!p.strides.empty()) {
    gathered.resize(static_cast<size_t>(p.count * el));
    gather_strided(in.data(), gathered.data(), el, p.shape, p.strides);
    elements = gathered.data();
  }
  if (p.from == p.to) {
    if (p.count) std::memcpy(out.data(), elements, static_cast<size_t>(p.count * el));
  } else {
    cast_floats(p.from, p.to, elements, out.data(), p.count);
  }
  return {};
}

bool same_ranges(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ByteRange& x, const ByteRange& y) {
    return x.file == y.file && x.offset == y.offset && x.length == y.length;
  });
}

// The cached inputs of `ranges` (every input range of a scheme or encode piece, asked
// for in one need_bytes round), read when the cache holds something else. A range the
// source holds as one buffer of its own (in WASM: the bytes JS read for this layer) is
// taken over rather than copied, so the layer's input is held once, not twice.
Result<std::vector<std::span<const uint8_t>>> cached_inputs(FileSet& files, const std::vector<ByteRange>& ranges,
                                                            SchemeInputCache& cache) {
  if (!same_ranges(cache.ranges, ranges)) {
    cache = {};  // freed before the next layer's inputs are kept
    AMN_TRY(require_ranges(files, ranges));
    for (const ByteRange& r : ranges) {
      if (auto owned = files.take(r.file, r.offset, r.length)) {
        cache.views.emplace_back(owned->get(), static_cast<size_t>(r.length));
        cache.taken.push_back(std::move(*owned));
      } else {
        AMN_ASSIGN(auto copy, read_copies(files, std::span(&r, 1)));
        cache.copies.push_back(std::move(copy[0]));  // a moved vector keeps its buffer: the view stays valid
        cache.views.emplace_back(cache.copies.back());
      }
    }
    cache.ranges = ranges;
  }
  return cache.views;
}

Status run_scheme(const Plan& plan, const Piece& p, FileSet& files, std::span<uint8_t> out, SchemeInputCache& cache) {
  if (p.op >= plan.ops.size() || !plan.ops[p.op]) return make_error(ErrorCode::internal, "a scheme piece without its op");
  AMN_ASSIGN(auto views, cached_inputs(files, p.inputs, cache));
  return plan.ops[p.op]->run(views, p.row_begin, p.row_end, p.to, out.data());
}

Status run_encode(const Plan& plan, const Piece& p, FileSet& files, std::span<uint8_t> out, SchemeInputCache& cache) {
  if (p.op >= plan.encoders.size() || !plan.encoders[p.op] || p.inputs.size() != 1) {
    return make_error(ErrorCode::internal, "an encode piece without its encoder");
  }
  AMN_ASSIGN(auto views, cached_inputs(files, p.inputs, cache));
  return plan.encoders[p.op]->run(views[0], p.from, p.part, p.row_begin, p.row_end, out.data());
}

// Runs a piece whose input bytes are `in` (its whole input range).
Status run_piece_on(const Plan& plan, const Piece& p, std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (p.kind == PieceKind::gather) return run_gather(p, plan.limits, in, out);
  std::vector<uint8_t> swapped;  // big-endian input, made little-endian (one piece at most)
  if (p.swap_width > 1) {
    swapped.assign(in.begin(), in.end());
    for (size_t at = 0; at + p.swap_width <= swapped.size(); at += p.swap_width) {
      std::reverse(swapped.begin() + at, swapped.begin() + at + p.swap_width);
    }
    in = swapped;
  } else if (p.swap_block_fields) {
    // Pieces hold whole blocks, so block boundaries are at multiples of block_bytes.
    const GgmlTraits& info = *ggml_traits(p.ggml_type);
    const auto fields = ggml_big_endian_f16_fields(p.ggml_type).value();
    swapped.assign(in.begin(), in.end());
    for (size_t block = 0; block + info.block_bytes <= swapped.size(); block += info.block_bytes) {
      for (uint16_t f : fields) std::swap(swapped[block + f], swapped[block + f + 1]);
    }
    in = swapped;
  }
  switch (p.kind) {
    case PieceKind::copy:
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return {};
    case PieceKind::cast:
      cast_floats(p.from, p.to, in.data(), out.data(), p.count);
      return {};
    case PieceKind::zeros:
    case PieceKind::gather:
    case PieceKind::dequantize_scheme:
    case PieceKind::encode:
      return {};  // handled above
    case PieceKind::dequantize_ggml: {
      if (p.to == DType::F32) {
        // The output buffer is the caller's byte vector: new[]-aligned, so floats fit.
        dequantize_ggml(p.ggml_type, in.data(), reinterpret_cast<float*>(out.data()), p.blocks);
        return {};
      }
      std::vector<float> staged(p.count);  // one piece: at most kMaxPieceBytes of F32
      dequantize_ggml(p.ggml_type, in.data(), staged.data(), p.blocks);
      cast_floats(DType::F32, p.to, reinterpret_cast<const uint8_t*>(staged.data()), out.data(), p.count);
      return {};
    }
  }
  return make_error(ErrorCode::internal, "unknown piece kind");
}

Status check_piece(const Plan& plan, size_t i, std::span<uint8_t> out) {
  if (i >= plan.pieces.size()) return make_error(ErrorCode::invalid_argument, "no such piece");
  if (out.size() != plan.pieces[i].out_length) return make_error(ErrorCode::internal, "piece output buffer has the wrong size");
  return {};
}

}  // namespace

Status run_piece(const Plan& plan, size_t i, FileSet& files, std::span<uint8_t> out, SchemeInputCache* cache) {
  AMN_TRY(check_piece(plan, i, out));
  const Piece& p = plan.pieces[i];
  if (p.kind == PieceKind::dequantize_scheme || p.kind == PieceKind::encode) {
    SchemeInputCache local;
    if (p.kind == PieceKind::encode) return run_encode(plan, p, files, out, cache ? *cache : local);
    return run_scheme(plan, p, files, out, cache ? *cache : local);
  }
  if (cache) *cache = {};
  if (p.kind == PieceKind::zeros) {  // alignment padding: no input
    std::fill(out.begin(), out.end(), uint8_t{0});
    return {};
  }
  AMN_ASSIGN(auto in, files.read(p.file, p.in_offset, p.in_length));
  return run_piece_on(plan, p, in, out);
}

Status run_prepare(const Plan& plan, size_t i, FileSet& files, SchemeInputCache* cache) {
  if (i >= plan.prepares.size()) return make_error(ErrorCode::invalid_argument, "no such prepare");
  const Plan::Prepare& step = plan.prepares[i];
  SchemeInputCache local;
  AMN_ASSIGN(auto views, cached_inputs(files, {step.source}, cache ? *cache : local));
  return plan.encoders[step.encoder]->prepare(views[0], step.from);
}

void finish_prepared(Plan& plan) {
  plan.data_bytes = 0;
  for (auto& p : plan.pieces) {
    if (p.kind == PieceKind::encode) {
      const TensorSpec& spec = plan.encoders[p.op]->outputs()[p.part];
      TensorSpec& t = plan.tensors[p.tensor];
      if (t.nbytes != spec.nbytes) {  // a part sized by prepare() is one piece
        t = spec;
        p.row_end = p.out_length = spec.nbytes;
      }
    }
    plan.data_bytes += p.out_length;
  }
  plan.prepares.clear();
  plan.header = safetensors_header(plan.tensors, plan.metadata);
}

Status prepare_plan(Plan& plan, FileSet& files) {
  SchemeInputCache cache;
  for (size_t i = 0; i < plan.prepares.size(); ++i) AMN_TRY(run_prepare(plan, i, files, &cache));
  if (!plan.prepares.empty()) finish_prepared(plan);
  return {};
}

Status execute_plan(const Plan& plan, FileSet& files, Sink& sink, const ExecuteHooks& hooks) {
  if (!plan.prepares.empty()) return make_error(ErrorCode::internal, "a plan executed before its prepares ran");
  const uint64_t total = plan.output_bytes();
  uint64_t done = 0;
  AMN_TRY(sink.write(plan.header));
  done += plan.header.size();
  // One buffer for the largest piece, not zero-filled (every byte is written before use).
  uint64_t largest = 0;
  for (const auto& p : plan.pieces) largest = std::max(largest, p.out_length);
  std::unique_ptr<uint8_t[]> buffer(new uint8_t[static_cast<size_t>(largest)]);
  std::vector<uint8_t> staging;  // a local file's piece input (grown once to the largest)
  SchemeInputCache scheme_inputs;
  for (size_t i = 0; i < plan.pieces.size(); ++i) {
    if (hooks.cancelled && hooks.cancelled()) return make_error(ErrorCode::cancelled, "cancelled");
    const Piece& p = plan.pieces[i];
    const bool cached = p.kind == PieceKind::dequantize_scheme || p.kind == PieceKind::encode;
    if (!cached) scheme_inputs = {};  // that layer is done
    if (p.kind == PieceKind::copy && p.swap_width <= 1 && !p.swap_block_fields) {
      // A plain copy goes from the source to the sink without passing through the buffer:
      // kernel-side when both ends are local files, else from the source's view.
      bool copied = false;
      const int fd = files.native_fd(p.file);
      if (fd >= 0 && p.in_offset <= files.size(p.file) && p.in_length <= files.size(p.file) - p.in_offset) {
        AMN_ASSIGN(copied, sink.copy_range(fd, p.in_offset, p.in_length));
      }
      if (!copied) {
        AMN_ASSIGN(auto in, files.read(p.file, p.in_offset, p.in_length));
        AMN_TRY(sink.write(in));
      }
    } else if (p.kind != PieceKind::zeros && !cached && files.native_fd(p.file) >= 0 &&
               p.in_length <= kMaxStagedInput) {
      // A local file's input is pread into a reused buffer rather than read through the
      // mapping: first touches of mapped pages fault one by one (~20 us each on some VMs),
      // while pread copies from the page cache in one call. A strided view's input can
      // span a huge storage: past kMaxStagedInput it stays a view of the mapping.
      const std::span<uint8_t> out(buffer.get(), static_cast<size_t>(p.out_length));
      if (staging.size() < p.in_length) staging.resize(static_cast<size_t>(p.in_length));
      const std::span<uint8_t> in(staging.data(), static_cast<size_t>(p.in_length));
      AMN_TRY(files.read_into(p.file, p.in_offset, in));
      AMN_TRY(run_piece_on(plan, p, in, out));
      AMN_TRY(sink.write(out));
    } else {
      const std::span<uint8_t> out(buffer.get(), static_cast<size_t>(p.out_length));
      AMN_TRY(run_piece(plan, i, files, out, &scheme_inputs));
      AMN_TRY(sink.write(out));
    }
    done += p.out_length;
    if (hooks.progress) hooks.progress(done, total);
  }
  return {};
}

}  // namespace amn
