// amn diff (report/model_diff.h): statuses and numbers checked against what numpy computes
// from the same files (fixtures/diff/*.py: gguf-py's own dequantizers for the GGUF pair),
// pieces of different sizes on the two sides, and the sans-IO run through two Sessions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "report/gguf_names.h"
#include "report/model_diff.h"
#include "session/open.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"
#include "whole_model.h"

using namespace amn;
using namespace amn::test;

namespace {

std::unique_ptr<WholeModel> open_fixture(const std::string& rel) {
  const std::string name = rel.substr(rel.rfind('/') + 1);
  return open_whole(read_file(fixture_path(rel)), name);
}

ModelDiff diff_of(WholeModel& a, WholeModel& b) {
  auto d = model_diff(a.model, a.files, b.model, b.files);
  REQUIRE(d);
  return std::move(d).value();
}

using simdjson::dom::element;

// A number of the expected file: null stands for NaN / ±Inf (JSON has neither).
double expected_number(element e) {
  if (e.is_null()) return NAN;
  return e.is_double() ? jv<double>(e.get_double()) : static_cast<double>(jv<int64_t>(e.get_int64()));
}

void check_number(double got, element want, double tolerance) {
  const double w = expected_number(want);
  if (std::isnan(w)) {
    CHECK(!std::isfinite(got));
  } else {
    CHECK(got == Approx(w).epsilon(tolerance).margin(1e-15));
  }
}

element field(element e, const char* key) { return jv<element>(e[key]); }
std::string_view text(element e, const char* key) { return jv<std::string_view>(e[key].get_string()); }
uint64_t count(element e, const char* key) { return jv<uint64_t>(e[key].get_uint64()); }

// Every tensor of `d` against the expected file, in order.
void check_against(const ModelDiff& d, const std::string& expected_rel, double tolerance) {
  simdjson::dom::parser parser;
  const element doc = jv<element>(parser.load(fixture_path(expected_rel)));
  CHECK(d.identical() == jv<bool>(doc["identical"].get_bool()));
  const simdjson::dom::array tensors = jv<simdjson::dom::array>(doc["tensors"].get_array());
  REQUIRE(d.tensors.size() == tensors.size());
  size_t i = 0;
  for (element want : tensors) {
    const TensorDiff& t = d.tensors[i++];
    INFO(t.name);
    CHECK(t.name == text(want, "name"));
    CHECK(diff_status_name(t.status) == text(want, "status"));
    element e;
    CHECK(t.name_b == (want["name_b"].get(e) == simdjson::SUCCESS ? text(want, "name_b") : ""));
    if (want["dtype_a"].get(e) == simdjson::SUCCESS) CHECK(t.dtype_a == text(want, "dtype_a"));
    if (want["dtype_b"].get(e) == simdjson::SUCCESS) CHECK(t.dtype_b == text(want, "dtype_b"));
    if (want["elements"].get(e) != simdjson::SUCCESS) {
      CHECK(!t.compared());
      continue;
    }
    REQUIRE(t.compared());
    CHECK(t.elements == count(want, "elements"));
    CHECK(t.equal == count(want, "equal"));
    CHECK(t.nonfinite == count(want, "nonfinite"));
    CHECK(t.nonfinite_mismatch == count(want, "nonfinite_mismatch"));
    check_number(t.finite ? t.max_abs : NAN, field(want, "max_abs_diff"), tolerance);
    check_number(t.mae(), field(want, "mae"), tolerance);
    check_number(t.rmse(), field(want, "rmse"), tolerance);
    check_number(t.cosine(), field(want, "cosine"), tolerance);
    check_number(t.snr_db(), field(want, "snr_db"), tolerance);
  }
}

// n little-endian values of T, value(i) each.
template <class T>
std::vector<uint8_t> le_bytes(size_t n, auto&& value) {
  std::vector<uint8_t> out(n * sizeof(T));
  for (size_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(value(i));
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
  }
  return out;
}

// Two Sessions, each parsed from its bytes as the parse asks for them.
void open_sessions(Session& a, const std::string& name_a, const std::vector<uint8_t>& fa, Session& b,
                   const std::string& name_b, const std::vector<uint8_t>& fb) {
  a.add_file(name_a, fa.size());
  b.add_file(name_b, fb.size());
  REQUIRE(feed(a, fa, [&] { return a.parse(); }));
  REQUIRE(feed(b, fb, [&] { return b.parse(); }));
}

// Every step of a's planned diff, each fed the bytes of the side it reads.
void run_diff_steps(Session& a, const std::vector<uint8_t>& fa, Session& b, const std::vector<uint8_t>& fb) {
  for (size_t i = 0; i < a.diff_step_count(); ++i) {
    const bool side_b = a.diff_step_side(i) == 1;
    REQUIRE(feed(side_b ? b : a, side_b ? fb : fa, [&] { return a.run_diff_step(i, b); }));
  }
}

}  // namespace

TEST_CASE("diff: a model against itself is identical, every tensor, exit status 0") {
  auto a = open_fixture("gguf_ftype/tiny-Q4_K_M.gguf");
  auto b = open_fixture("gguf_ftype/tiny-Q4_K_M.gguf");
  const ModelDiff d = diff_of(*a, *b);
  REQUIRE(d.tensors.size() == a->model.tensors.size());
  for (const auto& t : d.tensors) {
    INFO(t.name);
    CHECK(t.status == DiffStatus::identical);
    CHECK(t.equal == t.elements);
    CHECK(t.max_abs == 0);
  }
  CHECK(d.identical());
  CHECK(diff_exit_status(d) == 0);
  CHECK(diff_json(d).rfind(R"({"identical":true,"tensors":[{"name":"output.weight","status":"identical")", 0) == 0);
}

TEST_CASE("diff: constructed differences match numpy's numbers (fixtures/diff/make_pair.py)") {
  auto a = open_fixture("diff/a.safetensors");
  auto b = open_fixture("diff/b.safetensors");
  const ModelDiff d = diff_of(*a, *b);
  check_against(d, "diff/pair.expected.json", 1e-12);
  CHECK(diff_exit_status(d) == 3);
  const std::string text = render_diff(d);
  CHECK(text.find("12 tensors: 1 identical, 2 same_values, 6 different, 1 shape_mismatch, 1 only_in_a, 1 only_in_b\n"
                  "the models differ\n") != std::string::npos);
  CHECK(text.find("F32 [2, 3]") != std::string::npos);  // a shape mismatch shows both shapes
}

TEST_CASE("diff: an F16 GGUF against llama-quantize's Q4_K_M of it matches gguf-py's dequantized values") {
  auto a = open_fixture("gguf_ftype/tiny_llama_f16.gguf");
  auto b = open_fixture("gguf_ftype/tiny-Q4_K_M.gguf");
  // gguf-py's numpy dequantizers round like ggml's to within an ULP of F32 here and there.
  check_against(diff_of(*a, *b), "diff/tiny-Q4_K_M.expected.json", 1e-6);
}

TEST_CASE("diff: sides cut into pieces of different sizes are compared value by value") {
  // I64 pieces hold 2 Mi values (16 MiB), F32 pieces 4 Mi: the sides' pieces do not line up.
  constexpr size_t n = 3u << 20;
  constexpr size_t odd = 2'500'000;
  const std::string header_a = R"({"x":{"dtype":"I64","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                               std::to_string(n * 8) + "]}}";
  const std::string header_b = R"({"x":{"dtype":"F32","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                               std::to_string(n * 4) + "]}}";
  auto a = open_whole(make_safetensors(header_a, le_bytes<int64_t>(n, [](size_t i) { return int64_t(i % 1000); })), "a.safetensors");
  auto b = open_whole(make_safetensors(header_b, le_bytes<float>(n, [](size_t i) { return float(i % 1000) + (i == odd ? 2.f : 0.f); })),
                      "b.safetensors");
  auto run = DiffRun::start(a->model, b->model);
  REQUIRE(run);
  CHECK(run->steps() == 3);  // A, B, A: the side behind reads next
  CHECK(run->side(0) == 0);
  CHECK(run->side(1) == 1);
  CHECK(run->side(2) == 0);
  const ModelDiff d = diff_of(*a, *b);
  REQUIRE(d.tensors.size() == 1);
  const TensorDiff& t = d.tensors[0];
  CHECK(t.status == DiffStatus::different);
  CHECK(t.elements == n);
  CHECK(t.equal == n - 1);
  CHECK(t.max_abs == 2);
  CHECK(t.mae() == Approx(2.0 / n));
  CHECK(t.rmse() == Approx(std::sqrt(4.0 / n)));
}

TEST_CASE("diff through two Sessions, sans-IO: each step's bytes come from its side; the native result") {
  const auto fa = read_file(fixture_path("diff/a.safetensors"));
  const auto fb = read_file(fixture_path("diff/b.safetensors"));
  Session a(""), b("");
  open_sessions(a, "a.safetensors", fa, b, "b.safetensors", fb);
  REQUIRE(a.plan_diff(b));
  REQUIRE(a.diff_step_count() > 0);
  run_diff_steps(a, fa, b, fb);
  auto na = open_whole(fa, "a.safetensors");
  auto nb = open_whole(fb, "b.safetensors");
  const ModelDiff native = diff_of(*na, *nb);
  CHECK(a.diff_json() == diff_json(native));
  CHECK(a.diff_text() == render_diff(native));
  CHECK(a.diff_exit_status() == 3);
}

TEST_CASE("diff JSON: the fields docs/json-schema.md names; null where nothing was compared") {
  auto a = open_fixture("diff/a.safetensors");
  auto b = open_fixture("diff/b.safetensors");
  const std::string json = diff_json(diff_of(*a, *b));
  CHECK(json.find(R"({"name":"only_a","status":"only_in_a","dtype_a":"F32","dtype_b":null,"shape_a":[3],"shape_b":null,)"
                  R"("elements":0,"equal":null,"max_abs_diff":null,"mae":null,"rmse":null,"cosine":null,"snr_db":null,)"
                  R"("nonfinite":null,"nonfinite_mismatch":null})") != std::string::npos);
  CHECK(json.find(R"({"name":"same","status":"identical","dtype_a":"F32","dtype_b":"F32","shape_a":[8],"shape_b":[8],)"
                  R"("elements":8,"equal":8,"max_abs_diff":0,"mae":0,"rmse":0,"cosine":1,"snr_db":null,)") !=
        std::string::npos);
}

// ---- GGUF <-> Hugging Face names (report/gguf_names.h; fixtures/diff/make_hf_expected.py) ----

TEST_CASE("gguf names: llama.cpp's renaming, both suffixes, q / k head counts; unknown names are none") {
  const GgufNaming llama{"llama", true, 4, 2};
  auto q = hf_counterpart(llama, "blk.10.attn_q.weight");
  REQUIRE(q);
  CHECK(q->name == "model.layers.10.self_attn.q_proj.weight");
  CHECK(q->rows_permuted);
  CHECK(q->heads == 4);
  auto k = hf_counterpart(llama, "blk.0.attn_k.bias");
  REQUIRE(k);
  CHECK(k->name == "model.layers.0.self_attn.k_proj.bias");
  CHECK(k->heads == 2);
  auto v = hf_counterpart(llama, "blk.3.attn_v.weight");
  REQUIRE(v);
  CHECK(!v->rows_permuted);
  CHECK(hf_counterpart(llama, "token_embd.weight")->name == "model.embed_tokens.weight");
  CHECK(hf_counterpart(llama, "output.weight")->name == "lm_head.weight");
  CHECK(hf_counterpart(llama, "blk.1.ffn_norm.weight")->name == "model.layers.1.post_attention_layernorm.weight");
  for (const char* none : {"rope_freqs.weight", "blk.01.attn_q.weight", "blk..attn_q.weight", "blk.0.attn_q", "blk.0.ffn_gate_exps.weight"}) {
    INFO(none);
    CHECK(!hf_counterpart(llama, none));
  }
  const GgufNaming qwen2{"qwen2", false, 4, 2};
  CHECK(!hf_counterpart(qwen2, "blk.0.attn_q.bias")->rows_permuted);
  // LlamaModel.permute on one head of 8 rows: HF [t][j] -> GGUF [j][t].
  const uint64_t to_gguf[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (uint64_t r = 0; r < 8; ++r) {
    CHECK(permuted_row(r, 8, true) == to_gguf[r]);
    CHECK(permuted_row(to_gguf[r], 8, false) == r);
  }
}

TEST_CASE("diff: a Hugging Face checkpoint against llama.cpp's BF16 and Q8_0 GGUFs of it: matched through the names") {
  auto hf = open_fixture("diff/tiny_llama_hf/model.safetensors");
  for (const char* quant : {"bf16", "Q8_0"}) {
    INFO(quant);
    auto gguf = open_fixture(std::string("diff/tiny_llama_hf-") + quant + ".gguf");
    const ModelDiff d = diff_of(*hf, *gguf);
    // BF16: exact (the same values, q / k rows put back in order); Q8_0: gguf-py's numpy
    // dequantizer and ggml's may round an F32 value differently.
    check_against(d, std::string("diff/tiny_llama_hf-") + quant + ".expected.json", quant[0] == 'b' ? 1e-12 : 1e-6);
    CHECK(d.name_map == "llama");
    size_t permuted = 0;
    for (const auto& t : d.tensors) permuted += t.rows_permuted;
    CHECK(permuted == 4);  // q and k of two layers
    CHECK(diff_exit_status(d) == 3);
  }
}

TEST_CASE("diff: qwen2 and qwen3 checkpoints against llama.cpp's BF16 GGUFs of them: every tensor matched, none permuted") {
  // qwen2's q/k/v biases and qwen3's per-head q/k norms have GGUF names of their own
  // (attn_q.bias, attn_q_norm.weight); neither architecture permutes rows.
  for (const char* arch : {"qwen2", "qwen3"}) {
    INFO(arch);
    const std::string stem = std::string("diff/tiny_") + arch + "_hf";
    auto hf = open_fixture(stem + "/model.safetensors");
    auto gguf = open_fixture(stem + "-bf16.gguf");
    const ModelDiff d = diff_of(*hf, *gguf);
    check_against(d, stem + "-bf16.expected.json", 1e-12);
    CHECK(d.name_map == arch);
    for (const auto& t : d.tensors) CHECK_FALSE(t.rows_permuted);
    CHECK(diff_exit_status(d) == 3);  // the norms are BF16 against F32: same values, not identical
  }
}

TEST_CASE("diff: the GGUF as A: the same pairs, the permutation undone the other way") {
  auto hf = open_fixture("diff/tiny_llama_hf/model.safetensors");
  auto gguf = open_fixture("diff/tiny_llama_hf-Q8_0.gguf");
  const ModelDiff forward = diff_of(*hf, *gguf);
  const ModelDiff reverse = diff_of(*gguf, *hf);
  REQUIRE(reverse.tensors.size() == forward.tensors.size());
  CHECK(reverse.name_map == "llama");
  for (const auto& r : reverse.tensors) {
    INFO(r.name);
    const auto f = std::find_if(forward.tensors.begin(), forward.tensors.end(), [&](const TensorDiff& t) { return t.name_b == r.name; });
    REQUIRE(f != forward.tensors.end());
    CHECK(r.name_b == f->name);
    CHECK(r.status == f->status);
    CHECK(r.equal == f->equal);
    CHECK(r.max_abs == f->max_abs);  // the same pairs, whatever the order
    CHECK(r.mae() == Approx(f->mae()).epsilon(1e-12));
    CHECK(r.cosine() == Approx(f->cosine()).epsilon(1e-12));
  }
}

TEST_CASE("diff: exact names only: a GGUF and its Hugging Face original share no name") {
  auto hf = open_fixture("diff/tiny_llama_hf/model.safetensors");
  auto gguf = open_fixture("diff/tiny_llama_hf-bf16.gguf");
  auto d = model_diff(hf->model, hf->files, gguf->model, gguf->files, {.map_names = false});
  REQUIRE(d);
  REQUIRE(d->tensors.size() == 42);
  for (const auto& t : d->tensors) {
    INFO(t.name);
    CHECK((t.status == DiffStatus::only_in_a || t.status == DiffStatus::only_in_b));
    CHECK(t.name_b.empty());
  }
  CHECK(d->name_map.empty());
  CHECK(diff_json(*d).find("name_map") == std::string::npos);
}

TEST_CASE("diff JSON and table of mapped names: name_b, rows_permuted, name_map; the same through a Session") {
  const auto fa = read_file(fixture_path("diff/tiny_llama_hf/model.safetensors"));
  const auto fb = read_file(fixture_path("diff/tiny_llama_hf-bf16.gguf"));
  auto na = open_whole(fa, "model.safetensors");
  auto nb = open_whole(fb, "tiny_llama_hf-bf16.gguf");
  const ModelDiff native = diff_of(*na, *nb);
  const std::string json = diff_json(native);
  CHECK(json.find(R"({"name":"model.layers.1.self_attn.k_proj.weight","name_b":"blk.1.attn_k.weight","rows_permuted":true,)"
                  R"("status":"same_values","dtype_a":"BF16","dtype_b":"BF16","shape_a":[16,32],"shape_b":[16,32],)"
                  R"("elements":512,"equal":512,"max_abs_diff":0,)") != std::string::npos);
  CHECK(json.find(R"({"name":"lm_head.weight","name_b":"output.weight","status":"identical",)") != std::string::npos);
  CHECK(json.ends_with(R"(],"name_map":"llama"})"));
  const std::string text = render_diff(native);
  CHECK(text.find("model.layers.0.self_attn.q_proj.weight = blk.0.attn_q.weight") != std::string::npos);
  CHECK(text.find("21 tensors: 12 identical, 9 same_values\n"
                  "21 matched through llama.cpp's llama GGUF <-> Hugging Face names (q / k rows compared in one order)\n"
                  "the models differ\n") != std::string::npos);

  Session a(""), b("");
  open_sessions(a, "model.safetensors", fa, b, "tiny_llama_hf-bf16.gguf", fb);
  REQUIRE(a.plan_diff(b));
  run_diff_steps(a, fa, b, fb);
  CHECK(a.diff_json() == json);
  CHECK(a.diff_text() == text);
  REQUIRE(a.plan_diff(b, {.map_names = false}));
  CHECK(a.diff_step_count() == 0);
}

namespace {

// A one-tensor llama GGUF (v3) in memory: F32 `name` of row-major `shape`, head counts as KVs.
std::vector<uint8_t> llama_gguf(const std::string& name, uint64_t rows, uint64_t cols, uint32_t heads,
                                const std::vector<float>& values) {
  std::vector<uint8_t> out;
  auto put = [&out](const void* p, size_t n) { out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); };
  auto u32 = [&put](uint32_t v) { put(&v, 4); };
  auto u64 = [&put](uint64_t v) { put(&v, 8); };
  auto str = [&](const std::string& s) { u64(s.size()); put(s.data(), s.size()); };
  put("GGUF", 4);
  u32(3);
  u64(1);  // tensors
  u64(3);  // KVs
  str("general.architecture");
  u32(8);  // STRING
  str("llama");
  for (const char* key : {"llama.attention.head_count", "llama.attention.head_count_kv"}) {
    str(key);
    u32(4);  // UINT32
    u32(heads);
  }
  str(name);
  u32(2);
  u64(cols);  // ne[0]: the fastest-varying dimension
  u64(rows);
  u32(0);  // F32
  u64(0);
  out.resize((out.size() + 31) / 32 * 32, 0);
  put(values.data(), values.size() * 4);
  return out;
}

}  // namespace

TEST_CASE("diff: permuted rows streamed: pieces that end inside a head are held until the head is whole") {
  // 2046 rows of 4096 F32: 16 MiB pieces of 1024 rows against heads of 682 rows.
  constexpr uint64_t rows = 2046, cols = 4096, heads = 3, head_rows = rows / heads;
  std::vector<float> hf(rows * cols), gguf(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) hf[r * cols + c] = static_cast<float>(r * cols + c);
  }
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t r = 0; r < head_rows; ++r) {
      const uint64_t g = h * head_rows + permuted_row(r, head_rows, true);
      std::memcpy(&gguf[g * cols], &hf[(h * head_rows + r) * cols], cols * 4);
    }
  }
  gguf[(1000 * cols) + 7] += 3;  // one value off, in the second head
  const std::string header = R"({"model.layers.0.self_attn.q_proj.weight":{"dtype":"F32","shape":[2046,4096],"data_offsets":[0,)" +
                             std::to_string(rows * cols * 4) + "]}}";
  std::vector<uint8_t> hf_bytes(hf.size() * 4);
  std::memcpy(hf_bytes.data(), hf.data(), hf_bytes.size());
  auto a = open_whole(make_safetensors(header, hf_bytes), "model.safetensors");
  auto b = open_whole(llama_gguf("blk.0.attn_q.weight", rows, cols, heads, gguf), "q.gguf");
  for (const bool gguf_first : {false, true}) {
    INFO(gguf_first);
    auto run = DiffRun::start(gguf_first ? b->model : a->model, gguf_first ? a->model : b->model);
    REQUIRE(run);
    REQUIRE(run->steps() == 4);
    const ModelDiff d = gguf_first ? diff_of(*b, *a) : diff_of(*a, *b);
    REQUIRE(d.tensors.size() == 1);
    const TensorDiff& t = d.tensors[0];
    CHECK(t.rows_permuted);
    CHECK(t.status == DiffStatus::different);
    CHECK(t.elements == rows * cols);
    CHECK(t.equal == rows * cols - 1);
    CHECK(t.max_abs == 3);
  }
  // Without the mapping the rows meet in the wrong order: nothing is matched at all.
  auto plain = model_diff(a->model, a->files, b->model, b->files, {.map_names = false});
  REQUIRE(plain);
  CHECK(plain->tensors.size() == 2);
}
