// amn diff (report/model_diff.h): statuses and numbers checked against what numpy computes
// from the same files (fixtures/diff/*.py: gguf-py's own dequantizers for the GGUF pair),
// pieces of different sizes on the two sides, and the sans-IO run through two Sessions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

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
  a.add_file("a.safetensors", fa.size());
  b.add_file("b.safetensors", fb.size());
  REQUIRE(feed(a, fa, [&] { return a.parse(); }));
  REQUIRE(feed(b, fb, [&] { return b.parse(); }));
  REQUIRE(a.plan_diff(b));
  REQUIRE(a.diff_step_count() > 0);
  for (size_t i = 0; i < a.diff_step_count(); ++i) {
    const bool side_b = a.diff_step_side(i) == 1;
    REQUIRE(feed(side_b ? b : a, side_b ? fb : fa, [&] { return a.run_diff_step(i, b); }));
  }
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
