// Compares two models tensor by tensor, e.g. a quantized model against its original:
//   diff_models <a> <b>
// Prints each tensor's status, max |Δ|, cosine and SNR (A as the signal), the statistics
// of A's tensor with the lowest SNR, and whether the two models hold the same values
// (their dequantized hashes). Exits 0 when the models are identical, 3 when they differ
// (as `amn diff`), 1 on an error.
#include <anamnesis/anamnesis.hpp>

#include <cmath>
#include <cstdio>
#include <map>

static int fail(const anamnesis::Error& e) {
  std::fprintf(stderr, "error [%s]: %s\n", e.code.c_str(), e.message.c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: diff_models <a> <b>\n");
    return 2;
  }
  auto a = anamnesis::Model::open(argv[1]);
  if (!a) return fail(a.error());
  auto b = anamnesis::Model::open(argv[2]);
  if (!b) return fail(b.error());

  auto d = anamnesis::diff(*a, *b);
  if (!d) return fail(d.error());
  std::map<std::string, size_t> statuses;
  const anamnesis::TensorDiff* worst = nullptr;
  for (const auto& t : d->tensors) {
    ++statuses[t.status];
    // NaN: values not compared (a shape mismatch, a tensor on one side only).
    if (std::isnan(t.cosine)) {
      std::printf("%s %s\n", t.name.c_str(), t.status.c_str());
      continue;
    }
    std::printf("%s %s max|d| %.4g cosine %.4f snr %.2f dB\n", t.name.c_str(), t.status.c_str(), t.max_abs_diff,
                t.cosine, t.snr_db);
    if (t.status == "different" && (!worst || t.snr_db < worst->snr_db)) worst = &t;
  }
  std::printf("%zu tensors:", d->tensors.size());
  for (const auto& [status, count] : statuses) std::printf(" %zu %s", count, status.c_str());
  std::printf("\n");

  if (worst) {
    auto s = a->stats(worst->name);
    if (!s) return fail(s.error());
    std::printf("lowest SNR: %s; in A: min %.4g max %.4g mean %.4g std %.4g\n", worst->name.c_str(), s->min, s->max,
                s->mean, s->std);
  }

  // Stored differently, equal values: the hashes of the dequantized values agree.
  anamnesis::HashOptions values;
  values.dequantized = true;
  auto ha = a->hash(values);
  if (!ha) return fail(ha.error());
  auto hb = b->hash(values);
  if (!hb) return fail(hb.error());
  if (ha->model.sha256 == hb->model.sha256) std::printf("same values: sha256 %s\n", ha->model.sha256.c_str());
  else std::printf("different values\n");
  return d->identical ? 0 : 3;
}
