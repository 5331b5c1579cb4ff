// anamnesis::diff, Model::hash and Model::stats through the header alone, against numbers
// made outside anamnesis: numpy's (fixtures/diff/README.md), gguf-py's dequantizers
// (the same README), llama.cpp gguf-hash's output (fixtures/gguf/gguf_hash/README.md),
// hashlib's (fixtures/gguf/same_values/README.md); stats against the tensor's own values.
#include <anamnesis/anamnesis.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using anamnesis::Model;

namespace {

const std::string kFixtures = AMN_FIXTURES_DIR;

Model open_model(const std::string& rel) {
  auto m = Model::open(kFixtures + "/" + rel);
  REQUIRE(m);
  return *m;
}

const anamnesis::TensorDiff& entry(const anamnesis::DiffResult& d, const std::string& name) {
  for (const auto& t : d.tensors) {
    if (t.name == name) return t;
  }
  FAIL("no diff entry " << name);
  return d.tensors.front();
}

}  // namespace

// fixtures/diff/pair.expected.json: numpy's numbers for the constructed pair.
TEST_CASE("api: diff of the constructed pair, every status, numpy's numbers") {
  const Model a = open_model("diff/a.safetensors"), b = open_model("diff/b.safetensors");
  auto d = anamnesis::diff(a, b);
  REQUIRE(d);
  CHECK_FALSE(d->identical);
  const std::map<std::string, std::string> statuses = {
      {"w", "different"},       {"same", "identical"},       {"as_bf16", "same_values"}, {"h", "different"},
      {"nonfinite", "different"}, {"zeros", "same_values"},  {"zero_a", "different"},    {"shape", "shape_mismatch"},
      {"only_a", "only_in_a"},  {"ids", "different"},        {"f64", "different"},       {"only_b", "only_in_b"}};
  REQUIRE(d->tensors.size() == statuses.size());
  for (const auto& t : d->tensors) CHECK(t.status == statuses.at(t.name));
  CHECK(d->tensors.back().name == "only_b");  // B's own tensors come last

  const auto& w = entry(*d, "w");
  CHECK(w.elements == 512);
  CHECK(w.equal == 0);
  CHECK(w.max_abs_diff == Approx(0.0316963791847229).epsilon(1e-12));
  CHECK(w.mae == Approx(0.008020819887065045).epsilon(1e-12));
  CHECK(w.rmse == Approx(0.0099238565639472).epsilon(1e-12));
  CHECK(w.cosine == Approx(0.9999508458141185).epsilon(1e-12));
  CHECK(w.snr_db == Approx(40.074201271645734).epsilon(1e-12));
  CHECK(w.dtype_a == "F32");

  const auto& nonfinite = entry(*d, "nonfinite");
  CHECK(nonfinite.elements == 6);
  CHECK(nonfinite.equal == 3);
  CHECK(nonfinite.snr_db == Approx(13.010299956639813).epsilon(1e-12));
  CHECK(entry(*d, "same").snr_db == INFINITY);    // nothing differs
  CHECK(entry(*d, "zero_a").snr_db == -INFINITY);  // A is all zero
  CHECK(entry(*d, "f64").max_abs_diff == Approx(1.000088900582341e-12).epsilon(1e-9));

  const auto& shape = entry(*d, "shape");
  CHECK(shape.shape_a != shape.shape_b);
  CHECK(std::isnan(shape.cosine));  // values not compared
  const auto& only_a = entry(*d, "only_a");
  CHECK(only_a.dtype_b.empty());
  CHECK(only_a.shape_b.empty());
  CHECK(std::isnan(only_a.max_abs_diff));
}

// fixtures/diff/tiny-Q4_K_M.expected.json: gguf-py's dequantizers, an F16 GGUF against
// llama-quantize's Q4_K_M of it (1e-6: gguf-py and ggml may round an F32 value differently).
TEST_CASE("api: diff of an F16 GGUF against its Q4_K_M, and of a model with itself") {
  const Model f16 = open_model("gguf_ftype/tiny_llama_f16.gguf"), q4 = open_model("gguf_ftype/tiny-Q4_K_M.gguf");
  uint64_t calls = 0, last_total = 0;
  anamnesis::DiffOptions options;
  options.progress = [&](uint64_t done, uint64_t total) {
    CHECK(done == ++calls);
    last_total = total;
    return true;
  };
  auto d = anamnesis::diff(f16, q4, options);
  REQUIRE(d);
  CHECK(calls == last_total);
  CHECK(calls > 30);  // at least a piece of each side per compared tensor
  REQUIRE(d->tensors.size() == 30);
  const auto& embd = d->tensors.front();
  CHECK(embd.name == "token_embd.weight");
  CHECK(embd.status == "different");
  CHECK(embd.dtype_a == "F16");
  CHECK(embd.dtype_b == "Q4_K");
  CHECK(embd.elements == 16384);
  CHECK(embd.max_abs_diff == Approx(0.021803855895996094).epsilon(1e-6));
  CHECK(embd.cosine == Approx(0.9975770299261367).epsilon(1e-6));
  CHECK(embd.snr_db == Approx(23.146952795500518).epsilon(1e-6));
  CHECK(entry(*d, "blk.0.attn_norm.weight").status == "identical");

  auto self = anamnesis::diff(q4, q4);  // one model on both sides: one lock, no deadlock
  REQUIRE(self);
  CHECK(self->identical);
  for (const auto& t : self->tensors) CHECK(t.status == "identical");

  options.progress = [](uint64_t done, uint64_t) { return done < 3; };
  auto cancelled = anamnesis::diff(f16, q4, options);
  REQUIRE_FALSE(cancelled);
  CHECK(cancelled.error().code == "cancelled");
}

TEST_CASE("api: diff of a Hugging Face checkpoint against its Q8_0 GGUF, through llama.cpp's names") {
  // fixtures/diff/tiny_llama_hf-Q8_0.expected.json: gguf-py's names, the converter's own
  // permute undone, gguf-py's dequantizer and numpy.
  const Model hf = open_model("diff/tiny_llama_hf"), q8 = open_model("diff/tiny_llama_hf-Q8_0.gguf");
  auto d = anamnesis::diff(hf, q8);
  REQUIRE(d);
  CHECK(d->tensors.size() == 21);
  const auto& q = entry(*d, "model.layers.0.self_attn.q_proj.weight");
  CHECK(q.name_b == "blk.0.attn_q.weight");
  CHECK(q.rows_permuted);
  CHECK(q.status == "different");
  CHECK(q.elements == 1024);
  CHECK(q.max_abs_diff == Approx(0.0003070831298828125).epsilon(1e-6));
  CHECK(q.snr_db == Approx(45.483154152521266).epsilon(1e-6));
  CHECK(entry(*d, "model.layers.0.input_layernorm.weight").status == "same_values");
  // Plain names only: nothing matches.
  anamnesis::DiffOptions exact;
  exact.exact_names = true;
  auto plain = anamnesis::diff(hf, q8, exact);
  REQUIRE(plain);
  for (const auto& t : plain->tensors) CHECK((t.status == "only_in_a" || t.status == "only_in_b"));
}

// fixtures/gguf/gguf_hash/ggml_blocks.all_uuid.txt: `llama-gguf-hash --all --uuid`'s lines,
// "kind  digest  file[:tensor]".
TEST_CASE("api: hash gives llama.cpp gguf-hash's digests and UUID") {
  std::ifstream lines(kFixtures + "/gguf/gguf_hash/ggml_blocks.all_uuid.txt");
  std::map<std::string, std::map<std::string, std::string>> want;  // name ("" the model) -> kind -> digest
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string kind, digest, where;
    words >> kind >> digest >> where;
    const auto colon = where.find(':');
    want[colon == std::string::npos ? "" : where.substr(colon + 1)][kind] = digest;
  }
  REQUIRE(want.size() > 2);

  const Model model = open_model("gguf/valid/ggml_blocks.gguf");
  uint64_t calls = 0;
  anamnesis::HashOptions options;
  options.progress = [&](uint64_t, uint64_t) { return ++calls > 0; };
  auto h = model.hash(options);
  REQUIRE(h);
  CHECK_FALSE(h->dequantized);
  CHECK(calls >= h->tensors.size());
  REQUIRE(h->tensors.size() + 1 == want.size());
  for (const auto& t : h->tensors) {
    INFO(t.name);
    CHECK(t.sha256 == want.at(t.name).at("sha256"));
    CHECK(t.xxh64 == want.at(t.name).at("xxh64"));
    CHECK(t.sha1 == want.at(t.name).at("sha1"));
  }
  CHECK(h->model.name.empty());
  CHECK(h->model.sha256 == want.at("").at("sha256"));
  CHECK(h->model.xxh64 == want.at("").at("xxh64"));
  CHECK(h->uuid == want.at("").at("uuid"));

  options.progress = [](uint64_t, uint64_t) { return false; };
  auto cancelled = model.hash(options);
  REQUIRE_FALSE(cancelled);
  CHECK(cancelled.error().code == "cancelled");
}

// fixtures/gguf/same_values/expected.json: hashlib's SHA-256 of the values as F32.
TEST_CASE("api: hash of the values: Q8_0, Q4_0 and F32 storage of the same values agree") {
  anamnesis::HashOptions values;
  values.dequantized = true;
  std::string stored_w[3];
  int i = 0;
  for (const char* name : {"q8_0.gguf", "q4_0.gguf", "f32.gguf"}) {
    INFO(name);
    const Model model = open_model(std::string("gguf/same_values/") + name);
    auto h = model.hash(values);
    REQUIRE(h);
    CHECK(h->dequantized);
    REQUIRE(h->tensors.size() == 3);
    CHECK(h->tensors[0].name == "w");
    CHECK(h->tensors[0].bytes == 1024);
    CHECK(h->tensors[0].sha256 == "ab651f2922fe18b93b93bd566256fa306ea42a4a6e777f73cbca400ef85e718f");
    CHECK(h->model.bytes == 1296);
    CHECK(h->model.sha256 == "8a707661754c87e17fab02a52cd9c640259774b3b40ec86d728e305ffaaf537e");
    auto stored = model.hash();
    REQUIRE(stored);
    stored_w[i++] = stored->tensors.at(0).sha256;
  }
  CHECK(stored_w[0] != stored_w[1]);  // the stored bytes differ
  CHECK(stored_w[1] != stored_w[2]);
}

TEST_CASE("api: stats of a quantized weight: the numbers of its dequantized values") {
  const Model model = open_model("quantized/gptq/w4_g128_sym_v1/model.safetensors");
  const std::string name = model.tensors().at(0).name;
  auto s = model.stats(name);
  REQUIRE(s);
  CHECK(s->dtype == "gptq");
  CHECK(s->shape == std::vector<uint64_t>{256, 512});
  CHECK(s->skipped.empty());
  // Independently: the whole tensor as F32, summed here.
  auto t = model.tensor(name, "f32");
  REQUIRE(t);
  const size_t n = t->data.size() / 4;
  double sum = 0, sum_sq = 0, lo = INFINITY, hi = -INFINITY;
  uint64_t zeros = 0;
  for (size_t k = 0; k < n; ++k) {
    float v;
    std::memcpy(&v, t->data.data() + 4 * k, 4);
    sum += v;
    sum_sq += double(v) * v;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
    zeros += v == 0;
  }
  CHECK(s->count == n);
  CHECK(s->nan + s->pos_inf + s->neg_inf == 0);
  CHECK(s->zeros == zeros);
  CHECK(s->min == lo);
  CHECK(s->max == hi);
  CHECK(s->mean == Approx(sum / n).epsilon(1e-9));
  CHECK(s->std == Approx(std::sqrt(sum_sq / n - (sum / n) * (sum / n))).epsilon(1e-6));
  uint64_t binned = 0;
  for (uint64_t c : s->histogram) binned += c;
  CHECK(binned == n);
  CHECK(s->histogram.size() == 20);

  auto missing = model.stats("nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == "not_found");
}
