// bitsandbytes encoders: the scalar reference (bnb_encode.h). Each function is the
// producer's arithmetic in the producer's order; fixtures/lethe/bnb/README.md cites the lines.
#include "kernels/lethe/bnb_encode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bytes.h"

#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/torch_ops.h"  // absmax
#include "kernels/lethe/torch_sum.h"

namespace amn::lethe {
namespace {

// functional.get_4bit_type: the Python list as F32 (torch.tensor), then data.div_(max |data|).
struct Codebook4 {
  float code[16];
  float bounds[15];   // backends/default/ops.py _get_4bit_quantize_bounds: midpoints of the sorted codes
  uint8_t order[16];  // argsort(code) (torch 1.13 on CPU: stable; FP4's +0.0 (code 0) before -0.0 (code 8))
};

Codebook4 make_codebook(Bnb4Type type) {
  static constexpr float kNf4[16] = {
      -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
      -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
      0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
      0.7229568362236023f, 1.0f,
  };
  // The FP4 list's "-0" is Python's integer 0: +0.0.
  static constexpr float kFp4[16] = {0.0f,  0.0625f,  8.0f,  12.0f,  4.0f,  6.0f,  2.0f,  3.0f,
                                     0.0f, -0.0625f, -8.0f, -12.0f, -4.0f, -6.0f, -2.0f, -3.0f};
  Codebook4 c{};
  const float* src = type == Bnb4Type::fp4 ? kFp4 : kNf4;
  float mx = 0;
  for (int i = 0; i < 16; ++i) mx = std::max(mx, std::fabs(src[i]));
  for (int i = 0; i < 16; ++i) c.code[i] = src[i] / mx;
  std::array<uint8_t, 16> idx{};
  for (int i = 0; i < 16; ++i) idx[i] = static_cast<uint8_t>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](uint8_t a, uint8_t b) { return c.code[a] < c.code[b]; });
  for (int i = 0; i < 16; ++i) c.order[i] = idx[i];
  for (int i = 0; i < 15; ++i) c.bounds[i] = (c.code[idx[i]] + c.code[idx[i + 1]]) / 2.0f;
  return c;
}

const Codebook4& codebook(Bnb4Type type) {
  static const Codebook4 nf4 = make_codebook(Bnb4Type::nf4);
  static const Codebook4 fp4 = make_codebook(Bnb4Type::fp4);
  return type == Bnb4Type::fp4 ? fp4 : nf4;
}

// torch.bucketize(x, bounds) (right=False) as torch 1.13's cus_lower_bound computes it:
// the first bound >= x; NaN compares false everywhere and lands past the last bound.
uint8_t bucketize(const float* bounds, float x) {
  int lo = 0, hi = 15;
  while (lo < hi) {
    const int mid = lo + ((hi - lo) >> 1);
    if (!(bounds[mid] >= x))
      lo = mid + 1;
    else
      hi = mid;
  }
  return static_cast<uint8_t>(lo);
}

// torch.clamp(x, -1, 1): NaN stays NaN (both comparisons are false).
float clamp1(float x) { return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x); }

constexpr uint64_t kMaxBlock = 256;  // values bucketized at a time (a block or a piece of one)

// torch.bucketize(v, bounds) for every value of a block, without branches: the bounds are
// sorted, so the first bound >= v (cus_lower_bound's answer) is at index "how many bounds are
// not >= v" (15 for NaN, as the search above gives). Each bound is compared with the whole
// block at once so that the compiler vectorizes the comparisons (with the search, one
// unpredictable branch per halving made the encoder ~40x slower than memcpy of its input).
void bucketize_block(const float* bounds, const float* v, uint64_t len, uint8_t* idx) {
  int32_t count[kMaxBlock];
  for (uint64_t i = 0; i < len; ++i) count[i] = 0;
  for (int k = 0; k < 15; ++k) {
    const float b = bounds[k];
    for (uint64_t i = 0; i < len; ++i) count[i] += !(b >= v[i]);
  }
  for (uint64_t i = 0; i < len; ++i) idx[i] = static_cast<uint8_t>(count[i]);
}

// One 4-bit code per value of a block. Full blocks: scaled = clamp(x * (1.0 / max(absmax,
// 1e-38))) ("1.0 / t" is t.reciprocal() * 1.0); the remainder block: clamp(x / am).
void codes_of_block(const Codebook4& cb, const float* in, uint64_t len, float absmax, bool remainder, uint8_t* q) {
  float scaled[kMaxBlock];
  for (uint64_t start = 0; start < len; start += kMaxBlock) {  // blocks up to 4096: in pieces
    const uint64_t m = std::min<uint64_t>(kMaxBlock, len - start);
    if (remainder) {
      for (uint64_t i = 0; i < m; ++i) scaled[i] = clamp1(in[start + i] / absmax);
    } else {
      const float inv = 1.0f / bnb_absmax_divisor(absmax);
      for (uint64_t i = 0; i < m; ++i) scaled[i] = clamp1(in[start + i] * inv);
    }
    bucketize_block(cb.bounds, scaled, m, q + start);
    for (uint64_t i = 0; i < m; ++i) q[start + i] = cb.order[q[start + i]];
  }
}

void quantize_4bit(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize, float* absmax_out,
                   const float* absmax_in, uint8_t* packed, bool fp4_signed_zero) {
  const Codebook4& cb = codebook(type);
  std::vector<uint8_t> q(blocksize + 1);
  const uint64_t blocks = (n + blocksize - 1) / blocksize;
  // The full blocks by the SIMD kernel unless the reference is forced (kernels/cast.h:
  // force_impl, AMN_FORCE_IMPL); a remainder block, and all with the reference, here.
  uint64_t done = 0;
  if (!reference_impl_forced())
    done = simd::bnb4_full_blocks(cb.bounds, cb.order, in, n / blocksize, blocksize, absmax_in, absmax_out, packed,
                                  fp4_signed_zero && type == Bnb4Type::fp4);
  for (uint64_t b = done; b < blocks; ++b) {
    const uint64_t start = b * blocksize;
    const uint64_t len = std::min(blocksize, n - start);
    const bool remainder = len < blocksize;
    float am;
    if (absmax_in) {
      am = absmax_in[b];
    } else {
      am = lethe::absmax(in + start, len);  // torch max: the first NaN propagates
      if (remainder) am = bnb_absmax_divisor(am);  // the remainder's stored absmax is clamped
      absmax_out[b] = am;
    }
    codes_of_block(cb, in + start, len, am, remainder, q.data());
    if (fp4_signed_zero && type == Bnb4Type::fp4)
      for (uint64_t i = 0; i < len; ++i)
        if (in[start + i] == 0.0f && std::signbit(in[start + i])) q[i] = 8;
    // An odd n: bitsandbytes pads `scaled` with 0.0, whose code fills the last low nibble.
    if (len % 2) q[len] = cb.order[bucketize(cb.bounds, 0.0f)];
    uint8_t* out = packed + start / 2;
    for (uint64_t i = 0; i < len / 2; ++i) out[i] = static_cast<uint8_t>((q[2 * i] << 4) | q[2 * i + 1]);
    if (len % 2) out[len / 2] = static_cast<uint8_t>((q[len - 1] << 4) | q[len]);
  }
}

// ---- torch 1.13's float32 sum (aten/src/ATen/native/cpu/SumKernel.cpp) ----------------

constexpr int kLanes = 8;  // Vectorized<float>::size() for AVX2, NEON and the default build
struct Vec8 {
  float v[kLanes];
};
inline void add(Vec8& a, const Vec8& b) {
  for (int l = 0; l < kLanes; ++l) a.v[l] += b.v[l];
}

// The reduction loop on one contiguous run (cascade_sum's inner reductions): vectorized when
// the run holds a whole vector, else scalar. Returns the value accumulated into the output.
float cascade_sum_run(const float* x, int64_t n) {
  float sum;
  if (n >= kLanes && !reference_impl_forced() && simd::bnb_cascade_sum(x, n, &sum)) return sum;
  if (n >= kLanes) {
    const int64_t vec_size = n / kLanes;
    const auto vload = [x](int64_t j) {
      Vec8 v;
      std::memcpy(v.v, x + j * kLanes, sizeof v.v);
      return v;
    };
    const Vec8 vacc = torch_sum::row_sum(vload, vec_size, Vec8{}, [](Vec8& a, const Vec8& b) { add(a, b); });
    float final_acc = 0;
    for (int64_t k = vec_size * kLanes; k < n; ++k) final_acc += x[k];
    for (int l = 0; l < kLanes; ++l) final_acc += vacc.v[l];
    return final_acc;
  }
  return torch_sum::row_sum([x](int64_t i) { return x[i]; }, n, 0.0f, [](float& a, float b) { a += b; });
}

}  // namespace

const float* bnb4_quant_map(Bnb4Type type) { return codebook(type).code; }

void bnb4_quantize(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize, uint8_t* packed, float* absmax) {
  quantize_4bit(type, in, n, blocksize, absmax, nullptr, packed, false);
}

void bnb4_absmax(const float* in, uint64_t n, uint64_t blocksize, float* absmax) {
  const uint64_t blocks = (n + blocksize - 1) / blocksize;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t len = std::min(blocksize, n - b * blocksize);
    const float am = lethe::absmax(in + b * blocksize, len);  // torch max: the first NaN propagates
    absmax[b] = len < blocksize ? bnb_absmax_divisor(am) : am;  // as quantize_4bit stores it
  }
}

void bnb4_quantize_with_absmax(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize, const float* absmax,
                               uint8_t* packed, bool fp4_signed_zero) {
  quantize_4bit(type, in, n, blocksize, nullptr, absmax, packed, fp4_signed_zero);
}

float torch_mean_f32(const float* in, uint64_t n, unsigned torch_threads) {
  constexpr int64_t kGrain = 32768;  // at::internal::GRAIN_SIZE
  const auto count = static_cast<int64_t>(n);
  float sum = 0;  // iter.output().fill_(0), then CastStoreAccumulate: out += run sum
  if (count < kGrain || torch_threads <= 1) {
    sum += cascade_sum_run(in, count);
  } else {
    // two_pass_reduction: at::parallel_for(0, n, GRAIN_SIZE) over min(threads, ceil(n / grain))
    // OpenMP threads, chunk ceil(n / threads) each; buffer[t] = 0 + chunk sum; out = sum of
    // the buffer in thread order.
    const int64_t threads = std::min<int64_t>(torch_threads, (count + kGrain - 1) / kGrain);
    const int64_t chunk = (count + threads - 1) / threads;
    for (int64_t t = 0; t < threads; ++t) {
      const int64_t b = t * chunk;
      if (b >= count) break;
      float buffer = 0;
      buffer += cascade_sum_run(in + b, std::min(count, b + chunk) - b);
      sum += buffer;
    }
  }
  // mean_out: sum_out(...).div_(numel), a true division in F32
  return sum / static_cast<float>(count);
}

const float* bnb_dynamic_map() {
  // functional.create_dynamic_map(signed=True) under torch (linspace and the products in F32,
  // the list sorted, then torch.tensor(dtype=float32)); the bits of what bitsandbytes writes
  // as nested_quant_map (fixtures/lethe/bnb checks them against the producer's tensor).
  static constexpr uint32_t kBits[256] = {
    0xbf7e3333, 0xbf7a9999, 0xbf770000, 0xbf736666, 0xbf6fcccc, 0xbf6c3333, 0xbf68999a, 0xbf650000,
    0xbf616666, 0xbf5dcccc, 0xbf5a3333, 0xbf569999, 0xbf530000, 0xbf4f6666, 0xbf4bcccc, 0xbf483333,
    0xbf44999a, 0xbf410000, 0xbf3d6667, 0xbf39cccd, 0xbf363334, 0xbf32999a, 0xbf2f0000, 0xbf2b6667,
    0xbf27cccd, 0xbf243333, 0xbf20999a, 0xbf1d0000, 0xbf196666, 0xbf15cccd, 0xbf123334, 0xbf0e999a,
    0xbf0b0000, 0xbf076666, 0xbf03cccd, 0xbf003333, 0xbef93334, 0xbef20000, 0xbeeacccc, 0xbee3999a,
    0xbedc6666, 0xbed53332, 0xbece0000, 0xbec6cccc, 0xbebf999a, 0xbeb86666, 0xbeb13332, 0xbeaa0000,
    0xbea2cccc, 0xbe9b999a, 0xbe946666, 0xbe8d3334, 0xbe860000, 0xbe7d999a, 0xbe6f3334, 0xbe60cccd,
    0xbe526666, 0xbe440000, 0xbe359999, 0xbe273333, 0xbe18cccd, 0xbe0a6666, 0xbdf80000, 0xbddb3334,
    0xbdc9eb85, 0xbdc428f5, 0xbdbe6667, 0xbdb8a3d7, 0xbdb2e148, 0xbdad1eb8, 0xbda75c28, 0xbda1999a,
    0xbd9bd70a, 0xbd96147b, 0xbd9051eb, 0xbd8a8f5d, 0xbd84cccd, 0xbd7e147a, 0xbd728f5d, 0xbd670a3d,
    0xbd5b851f, 0xbd500000, 0xbd447ae1, 0xbd38f5c3, 0xbd2d70a3, 0xbd21eb85, 0xbd166667, 0xbd0ae147,
    0xbcfeb852, 0xbce7ae13, 0xbcd0a3d7, 0xbcb9999a, 0xbca28f5c, 0xbc8b851f, 0xbc68f5c3, 0xbc3ae148,
    0xbc1f3b64, 0xbc160418, 0xbc0ccccd, 0xbc039581, 0xbbf4bc6a, 0xbbe24dd3, 0xbbcfdf3b, 0xbbbd70a4,
    0xbbab020d, 0xbb989374, 0xbb8624dd, 0xbb676c8a, 0xbb428f5c, 0xbb1db22d, 0xbaf1a9fc, 0xbaa7ef9d,
    0xba7765ff, 0xba59e83e, 0xba3c6a80, 0xba1eecc1, 0xba016f01, 0xb9c7e283, 0xb98ce705, 0xb923d70b,
    0xb8ba1f4b, 0xb88aefb3, 0xb8378034, 0xb7b24206, 0xb70205ff, 0xb65a1a94, 0xb513a3b7, 0x00000000,
    0x3513a3b7, 0x365a1a94, 0x370205ff, 0x37b24206, 0x38378034, 0x388aefb3, 0x38ba1f4b, 0x3923d70b,
    0x398ce705, 0x39c7e283, 0x3a016f01, 0x3a1eecc1, 0x3a3c6a80, 0x3a59e83e, 0x3a7765ff, 0x3aa7ef9d,
    0x3af1a9fc, 0x3b1db22d, 0x3b428f5c, 0x3b676c8a, 0x3b8624dd, 0x3b989374, 0x3bab020d, 0x3bbd70a4,
    0x3bcfdf3b, 0x3be24dd3, 0x3bf4bc6a, 0x3c039581, 0x3c0ccccd, 0x3c160418, 0x3c1f3b64, 0x3c3ae148,
    0x3c68f5c3, 0x3c8b851f, 0x3ca28f5c, 0x3cb9999a, 0x3cd0a3d7, 0x3ce7ae13, 0x3cfeb852, 0x3d0ae147,
    0x3d166667, 0x3d21eb85, 0x3d2d70a3, 0x3d38f5c3, 0x3d447ae1, 0x3d500000, 0x3d5b851f, 0x3d670a3d,
    0x3d728f5d, 0x3d7e147a, 0x3d84cccd, 0x3d8a8f5d, 0x3d9051eb, 0x3d96147b, 0x3d9bd70a, 0x3da1999a,
    0x3da75c28, 0x3dad1eb8, 0x3db2e148, 0x3db8a3d7, 0x3dbe6667, 0x3dc428f5, 0x3dc9eb85, 0x3ddb3334,
    0x3df80000, 0x3e0a6666, 0x3e18cccd, 0x3e273333, 0x3e359999, 0x3e440000, 0x3e526666, 0x3e60cccd,
    0x3e6f3334, 0x3e7d999a, 0x3e860000, 0x3e8d3334, 0x3e946666, 0x3e9b999a, 0x3ea2cccc, 0x3eaa0000,
    0x3eb13332, 0x3eb86666, 0x3ebf999a, 0x3ec6cccc, 0x3ece0000, 0x3ed53332, 0x3edc6666, 0x3ee3999a,
    0x3eeacccc, 0x3ef20000, 0x3ef93334, 0x3f003333, 0x3f03cccd, 0x3f076666, 0x3f0b0000, 0x3f0e999a,
    0x3f123334, 0x3f15cccd, 0x3f196666, 0x3f1d0000, 0x3f20999a, 0x3f243333, 0x3f27cccd, 0x3f2b6667,
    0x3f2f0000, 0x3f32999a, 0x3f363334, 0x3f39cccd, 0x3f3d6667, 0x3f410000, 0x3f44999a, 0x3f483333,
    0x3f4bcccc, 0x3f4f6666, 0x3f530000, 0x3f569999, 0x3f5a3333, 0x3f5dcccc, 0x3f616666, 0x3f650000,
    0x3f68999a, 0x3f6c3333, 0x3f6fcccc, 0x3f736666, 0x3f770000, 0x3f7a9999, 0x3f7e3333, 0x3f800000,
  };
  static const std::array<float, 256> map = [] {
    std::array<float, 256> m{};
    for (int i = 0; i < 256; ++i) m[i] = bit_cast<float>(kBits[i]);
    return m;
  }();
  return map.data();
}

namespace {

constexpr int kLutSize = 65536;

// csrc/cpu_ops.cpp build_quantize_lut: the nearest code of each of 65536 points of [-1, 1].
void build_quantize_lut(const float* code, uint8_t* lut) {
  float mid[255];
  for (int i = 0; i < 255; ++i) mid[i] = 0.5f * (code[i] + code[i + 1]);
  int idx = 0;
  for (int i = 0; i < kLutSize; ++i) {
    const float val = -1.0f + (2.0f * static_cast<float>(i)) / static_cast<float>(kLutSize - 1);
    while (idx < 255 && mid[idx] < val) ++idx;
    lut[i] = static_cast<uint8_t>(idx);
  }
}

struct Lut {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kLutSize + 3);  // padded: the SIMD gather reads 4 bytes
};

const uint8_t* dynamic_lut() {
  static const Lut lut = [] {
    Lut l;
    build_quantize_lut(bnb_dynamic_map(), l.bytes.data());
    return l;
  }();
  return lut.bytes.data();
}

// norm_to_lut_index: std::clamp to [-1, 1], then (v + 1) * 0.5 * 65535 + 0.5 truncated.
// bitsandbytes' x86 build (GCC, -mfma) fuses the last multiply-add, its aarch64 path
// (vmlaq_f32) computes (v + 1) * 32767.5 + 0.5; fused or not, every float in [-1, 1] gives the
// same index (checked exhaustively), so this is computed unfused. NaN: std::clamp keeps it;
// x86's cvttss2si gives 0x80000000, whose low 16 bits are index 0 (aarch64's vcvtq_u32_f32
// gives 0 too).
uint16_t norm_to_lut_index(float v) {
  v = (v < -1.0f) ? -1.0f : ((1.0f < v) ? 1.0f : v);
  if (std::isnan(v)) return 0;
  const float t = (v + 1.0f) * 0.5f;
  const float u = t * static_cast<float>(kLutSize - 1);
  return static_cast<uint16_t>(u + 0.5f);
}

// quantize_cpu_impl<float>: std::max ignores a NaN (absmax 0 when the block is all NaN).
void quantize_blockwise(const float* in, uint64_t count, uint64_t blocksize, const float* code,
                        const float* absmax_in, uint8_t* codes, float* absmax_out) {
  std::vector<uint8_t> own;
  const uint8_t* lut;
  if (code == bnb_dynamic_map() || std::memcmp(code, bnb_dynamic_map(), 256 * sizeof(float)) == 0) {
    lut = dynamic_lut();
  } else {
    own.resize(kLutSize + 3);
    build_quantize_lut(code, own.data());
    lut = own.data();
  }
  const uint64_t blocks = (count + blocksize - 1) / blocksize;
  const bool use_simd = !reference_impl_forced();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t start = b * blocksize;
    const uint64_t end = std::min(start + blocksize, count);
    float am = 0.0f;
    if (absmax_in) {
      am = absmax_in[b];
    } else {
      // The SIMD kernel's share first (its max does not depend on the order), then ours.
      uint64_t i = start;
      if (use_simd) i += simd::bnb_blockwise_absmax(in + start, end - start, &am);
      for (; i < end; ++i) am = std::max(am, std::fabs(in[i]));
      absmax_out[b] = am;
    }
    if (am == 0.0f) {
      std::fill(codes + start, codes + end, uint8_t{0});
      continue;
    }
    const float inv = 1.0f / am;
    uint64_t i = start;
    if (use_simd) i += simd::bnb_blockwise_codes(in + i, end - i, inv, lut, codes + i);  // whole vectors
    for (; i < end; ++i) codes[i] = lut[norm_to_lut_index(in[i] * inv)];
  }
}

}  // namespace

void bnb_quantize_blockwise(const float* in, uint64_t count, uint64_t blocksize, const float* code, uint8_t* codes,
                            float* nested_absmax) {
  quantize_blockwise(in, count, blocksize, code, nullptr, codes, nested_absmax);
}

void bnb_quantize_blockwise_with_absmax(const float* in, uint64_t count, uint64_t blocksize, const float* code,
                                        const float* nested_absmax, uint8_t* codes) {
  quantize_blockwise(in, count, blocksize, code, nested_absmax, codes, nullptr);
}

float bnb4_double_quant(const float* absmax, uint64_t count, uint8_t* codes, float* nested_absmax,
                        unsigned torch_threads) {
  const float offset = torch_mean_f32(absmax, count, torch_threads);
  std::vector<float> centred(count);
  for (uint64_t i = 0; i < count; ++i) centred[i] = absmax[i] - offset;
  quantize_blockwise(centred.data(), count, 256, bnb_dynamic_map(), nullptr, codes, nested_absmax);
  return offset;
}

namespace {

// torch.round (half to even) then .to(torch.int8): x86 converts through int32 (cvttss2si),
// so NaN, +-Inf and anything out of int32 range give 0x80000000, whose low byte is 0; other
// values wrap modulo 256.
int8_t to_int8(float p) {
  const float r = std::nearbyint(p);
  if (!(std::fabs(r) < 2147483648.0f)) return 0;
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(static_cast<int32_t>(r))));
}

float to_f16_value(float x) { return scalar::f16_to_f32(scalar::f32_to_f16(x)); }

// The codes of a row for its SCB; `amax` the row's amax |x| (lethe::absmax) when known.
void int8_codes(const float* row, uint64_t cols, float scb, const float* amax, int8_t* out) {
  // 127.0 / row_stats is row_stats.reciprocal() * 127.0 (Tensor.__rtruediv__), both in F32.
  const float recip = 1.0f / scb;
  const float scale = recip * 127.0f;
  if (!reference_impl_forced() && simd::bnb_int8_row(row, cols, scale, amax, out)) return;  // the SIMD kernel
  for (uint64_t c = 0; c < cols; ++c) out[c] = to_int8(to_f16_value(row[c]) * scale);
}

}  // namespace

void bnb_int8_quantize_row_with_scb(const float* row, uint64_t cols, float scb, int8_t* out) {
  int8_codes(row, cols, scb, nullptr, out);
}

void bnb_int8_quantize_row(const float* row, uint64_t cols, int8_t* out, float* scb) {
  // torch.max(A.abs(), dim=1) in F16, then .float(): the first NaN propagates.
  float m = 0;
  if (!reference_impl_forced()) {
    // F16 rounding is monotonic and symmetric, so max |f16(x)| is f16(max |x|); a row with
    // a NaN gives F16's NaN either way (made positive by the abs).
    const float amax = absmax(row, cols);
    *scb = std::fabs(to_f16_value(amax));
    int8_codes(row, cols, *scb, &amax, out);
    return;
  }
  for (uint64_t c = 0; c < cols; ++c) {
    const float a = std::fabs(to_f16_value(row[c]));
    if (std::isnan(a)) {
      m = a;
      break;
    }
    if (a > m) m = a;
  }
  *scb = m;
  int8_codes(row, cols, m, nullptr, out);
}

}  // namespace amn::lethe
