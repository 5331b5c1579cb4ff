#include "convert/execute.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "convert/gather.h"
#include "convert/worker_pool.h"
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

// A scheme or encode piece on its inputs' bytes (every range of p.inputs, in order).
Status run_on_inputs(const Plan& plan, const Piece& p, const std::vector<std::span<const uint8_t>>& views,
                     std::span<uint8_t> out) {
  if (p.kind == PieceKind::encode) {
    if (p.op >= plan.encoders.size() || !plan.encoders[p.op] || views.size() != 1) {
      return make_error(ErrorCode::internal, "an encode piece without its encoder");
    }
    return plan.encoders[p.op]->run(views[0], p.from, p.part, p.row_begin, p.row_end, out.data());
  }
  if (p.op >= plan.ops.size() || !plan.ops[p.op]) return make_error(ErrorCode::internal, "a scheme piece without its op");
  return plan.ops[p.op]->run(views, p.row_begin, p.row_end, p.to, out.data());
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
    AMN_ASSIGN(auto views, cached_inputs(files, p.inputs, cache ? *cache : local));
    return run_on_inputs(plan, p, views, out);
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

namespace {

bool reads_inputs(const Piece& p) { return p.kind == PieceKind::dequantize_scheme || p.kind == PieceKind::encode; }

bool plain_copy(const Piece& p) { return p.kind == PieceKind::copy && p.swap_width <= 1 && !p.swap_block_fields; }

// A local file's piece input small enough to be read into a buffer of its own.
bool staged_input(const Piece& p, FileSet& files) {
  return p.kind != PieceKind::zeros && !reads_inputs(p) && files.native_fd(p.file) >= 0 && p.in_length <= kMaxStagedInput;
}

// What the calling thread keeps between pieces: the output buffer, a local file's staged
// input, the scheme inputs of the layer at hand.
struct CallerState {
  std::unique_ptr<uint8_t[]> buffer;  // the largest piece's output, not zero-filled
  std::vector<uint8_t> staging;       // grown once to the largest staged input
  SchemeInputCache scheme_inputs;
};

// Runs piece `i` on the calling thread and writes its bytes to the sink.
Status write_piece_here(const Plan& plan, size_t i, FileSet& files, Sink& sink, CallerState& st) {
  const Piece& p = plan.pieces[i];
  if (!reads_inputs(p)) st.scheme_inputs = {};  // that layer is done
  if (plain_copy(p)) {
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
    return {};
  }
  const std::span<uint8_t> out(st.buffer.get(), static_cast<size_t>(p.out_length));
  if (staged_input(p, files)) {
    // A local file's input is pread into a reused buffer rather than read through the
    // mapping: first touches of mapped pages fault one by one (~20 us each on some VMs),
    // while pread copies from the page cache in one call. A strided view's input can
    // span a huge storage: past kMaxStagedInput it stays a view of the mapping.
    if (st.staging.size() < p.in_length) st.staging.resize(static_cast<size_t>(p.in_length));
    const std::span<uint8_t> in(st.staging.data(), static_cast<size_t>(p.in_length));
    AMN_TRY(files.read_into(p.file, p.in_offset, in));
    AMN_TRY(run_piece_on(plan, p, in, out));
  } else {
    AMN_TRY(run_piece(plan, i, files, out, &st.scheme_inputs));
  }
  return sink.write(out);
}

uint64_t largest_output(const Plan& plan) {
  uint64_t largest = 0;
  for (const auto& p : plan.pieces) largest = std::max(largest, p.out_length);
  return largest;
}

Status execute_on_caller(const Plan& plan, FileSet& files, Sink& sink, const ExecuteHooks& hooks, uint64_t done,
                         uint64_t total) {
  CallerState st;
  st.buffer.reset(new uint8_t[static_cast<size_t>(largest_output(plan))]);
  for (size_t i = 0; i < plan.pieces.size(); ++i) {
    if (hooks.cancelled && hooks.cancelled()) return make_error(ErrorCode::cancelled, "cancelled");
    AMN_TRY(write_piece_here(plan, i, files, sink, st));
    done += plan.pieces[i].out_length;
    if (hooks.progress) hooks.progress(done, total);
  }
  return {};
}

uint64_t input_bytes(const std::vector<ByteRange>& ranges) {
  uint64_t n = 0;
  for (const auto& r : ranges) n += r.length;
  return n;
}

// The F32 working memory of an encode piece: the encoders hold its values and their
// decoding (8 bytes an element; the planner caps a piece at kMaxPieceBytes / 4 source
// elements, plan_forget.cpp), estimated from the share of its part the piece writes.
uint64_t encode_working_bytes(const Plan& plan, const Piece& p) {
  const uint64_t element = std::max<uint64_t>(1, dtype_info(p.from).block_bytes);
  const uint64_t part = std::max<uint64_t>(1, plan.tensors[p.tensor].nbytes);
  const uint64_t elements = std::min(kMaxPieceBytes / 4, input_bytes(p.inputs) / element * p.out_length / part + 1);
  return 8 * elements;
}

using Copies = std::vector<std::vector<uint8_t>>;

// A piece in flight: its input (the layer's shared copies, or a staged range of its
// own), its output, and what it counts against the budget until written.
struct Job {
  size_t piece = 0;
  bool on_caller = false;  // copies, padding, inputs read through a view: run at write time
  std::shared_ptr<const Copies> inputs;
  std::vector<uint8_t> staged;
  std::unique_ptr<uint8_t[]> out;
  uint64_t cost = 0;
  Status status;
  bool done = false;  // guarded by the executor's mutex
};

Status run_job(const Plan& plan, Job& job) {
  const Piece& p = plan.pieces[job.piece];
  const std::span<uint8_t> out(job.out.get(), static_cast<size_t>(p.out_length));
  if (reads_inputs(p)) {
    return run_on_inputs(plan, p, std::vector<std::span<const uint8_t>>(job.inputs->begin(), job.inputs->end()), out);
  }
  return run_piece_on(plan, p, job.staged, out);
}

// The pieces run by `threads` workers while this thread reads their inputs, in piece
// order, and writes their outputs, in piece order. Budget: at most `threads` pieces in
// flight; the layer copies they hold together at most the largest piece input (so a
// new layer's copy waits for the pieces of the last one when both would not fit); the
// pieces' own buffers (output, staged input, working memory) together at most
// max(the largest input, 2 x kMaxPieceBytes), or one piece. So the peak stays near the
// one-thread peak plus one largest input: within forget's 2 x the largest tensor +
// 64 MiB (tests_js/cli/forget-memory.test.mjs).
Status execute_in_pool(const Plan& plan, FileSet& files, Sink& sink, const ExecuteHooks& hooks, uint64_t done,
                       uint64_t total) {
#if defined(__GLIBC__)
  // glibc raises its mmap threshold to the largest block freed (up to 32 MiB), after
  // which the workers' piece buffers come from per-thread arenas that keep what is freed:
  // with 8 threads, forget's peak RSS rose ~260 MiB above this budget. A fixed threshold
  // maps every buffer of 1 MiB or more and unmaps it when freed.
  static std::once_flag fixed_threshold;
  std::call_once(fixed_threshold, [] { mallopt(M_MMAP_THRESHOLD, 1 << 20); });
#endif
  uint64_t largest_input = 0;
  for (const auto& p : plan.pieces) {
    largest_input = std::max(largest_input, reads_inputs(p) ? input_bytes(p.inputs) : p.in_length);
  }
  const uint64_t work_budget = std::max(largest_input, 2 * kMaxPieceBytes);
  const size_t window_max = hooks.threads;

  std::mutex mutex;
  std::condition_variable finished;
  std::atomic<bool> abandon{false};  // an error or cancel: queued pieces need not run
  std::deque<std::unique_ptr<Job>> window;
  std::shared_ptr<const Copies> layer;
  std::vector<ByteRange> layer_ranges;
  uint64_t in_flight = 0;
  CallerState st;  // for the pieces run at write time
  Status failed;
  WorkerPool pool(hooks.threads);  // declared last: joined before the jobs are freed

  auto wait_head = [&] {
    std::unique_lock lock(mutex);
    finished.wait(lock, [&] { return window.front()->done; });
  };
  // Every worker's job finished (after an error: nothing may still use the window).
  auto settle = [&](Status status) {
    abandon = true;
    std::unique_lock lock(mutex);
    finished.wait(lock, [&] { return std::all_of(window.begin(), window.end(), [](const auto& j) { return j->on_caller || j->done; }); });
    return status;
  };
  // Writes the finished jobs at the head of the window, in order.
  auto write_ready = [&]() -> Status {
    while (!window.empty()) {
      Job& job = *window.front();
      const Piece& p = plan.pieces[job.piece];
      if (job.on_caller) {
        if (!st.buffer) st.buffer.reset(new uint8_t[static_cast<size_t>(largest_output(plan))]);
        AMN_TRY(write_piece_here(plan, job.piece, files, sink, st));
      } else {
        {
          std::lock_guard lock(mutex);
          if (!job.done) return {};
        }
        AMN_TRY(job.status);
        AMN_TRY(sink.write({job.out.get(), static_cast<size_t>(p.out_length)}));
      }
      done += p.out_length;
      if (hooks.progress) hooks.progress(done, total);
      in_flight -= job.cost;
      window.pop_front();
    }
    return {};
  };

  size_t next = 0;
  while (next < plan.pieces.size() || !window.empty()) {
    if (Status s = write_ready(); !s) return settle(s);
    if (next == plan.pieces.size()) {
      if (!window.empty()) wait_head();
      continue;
    }
    if (hooks.cancelled && hooks.cancelled()) return settle(make_error(ErrorCode::cancelled, "cancelled"));
    const Piece& p = plan.pieces[next];
    auto job = std::make_unique<Job>();
    job->piece = next;
    job->on_caller = !reads_inputs(p) && !staged_input(p, files);
    if (!job->on_caller) {
      job->cost = p.out_length + (reads_inputs(p) ? encode_working_bytes(plan, p) : p.in_length);
    }
    const bool new_layer = reads_inputs(p) && !(layer && same_ranges(layer_ranges, p.inputs));
    // A new layer's copy while pieces still hold the last one: both must fit.
    const bool layer_busy = new_layer && layer && layer.use_count() > 1 &&
                            input_bytes(layer_ranges) + input_bytes(p.inputs) > largest_input;
    if (!window.empty() && (window.size() >= window_max || in_flight + job->cost > work_budget || layer_busy)) {
      wait_head();
      continue;
    }
    ++next;
    if (job->on_caller) {
      window.push_back(std::move(job));
      continue;
    }
    if (reads_inputs(p)) {
      if (new_layer) {
        layer.reset();  // freed before the next layer's copy is made, unless pieces hold it
        auto copies = read_copies(files, p.inputs);
        if (!copies) return settle(std::move(copies).error());
        layer = std::make_shared<const Copies>(std::move(copies).value());
        layer_ranges = p.inputs;
      }
      job->inputs = layer;
    } else {
      layer.reset();  // that layer is done
      job->staged.resize(static_cast<size_t>(p.in_length));
      if (Status s = files.read_into(p.file, p.in_offset, job->staged); !s) return settle(s);
    }
    job->out.reset(new uint8_t[static_cast<size_t>(p.out_length)]);
    in_flight += job->cost;
    Job* raw = job.get();
    window.push_back(std::move(job));
    pool.submit([&plan, &mutex, &finished, &abandon, raw] {
      Status s = abandon ? Status{} : run_job(plan, *raw);
      {
        std::lock_guard lock(mutex);
        raw->status = std::move(s);
        raw->done = true;
      }
      finished.notify_all();
    });
  }
  return {};
}

}  // namespace

unsigned default_threads() {
#if defined(__EMSCRIPTEN__)
  return 1;
#else
  return std::max(1u, std::thread::hardware_concurrency());
#endif
}

unsigned execute_threads(uint64_t requested) {
  if (requested == 0) return default_threads();
#if defined(__EMSCRIPTEN__)
  return 1;
#else
  return static_cast<unsigned>(std::min<uint64_t>(requested, 256));
#endif
}

Status execute_plan(const Plan& plan, FileSet& files, Sink& sink, const ExecuteHooks& hooks) {
  if (!plan.prepares.empty()) return make_error(ErrorCode::internal, "a plan executed before its prepares ran");
  const uint64_t total = plan.output_bytes();
  AMN_TRY(sink.write(plan.header));
  const uint64_t done = plan.header.size();
#if defined(__EMSCRIPTEN__)
  const bool pool = false;  // no threads in this build
#else
  const bool pool = hooks.threads > 1 && plan.pieces.size() > 1;
#endif
  if (pool) return execute_in_pool(plan, files, sink, hooks, done, total);
  return execute_on_caller(plan, files, sink, hooks, done, total);
}

}  // namespace amn
