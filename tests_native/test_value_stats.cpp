// amn stats: value statistics streamed through the plan's pieces (report/value_stats.h),
// checked against sums over the whole tensor taken independently.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "convert/execute.h"
#include "report/value_stats.h"
#include "session/open.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"
#include "whole_model.h"

using namespace amn;
using namespace amn::test;

namespace {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

TEST_CASE("stats: counts, range, moments and a histogram over the finite values") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {1, -2, 0, std::nanf(""), inf, 3, 0, -inf};
  auto o = open_whole(make_safetensors(R"({"w":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}})", f32_bytes(v)),
                      "model.safetensors");
  auto s = tensor_stats(o->model, o->files, "w");
  REQUIRE(s);
  CHECK(s->dtype == "F32");
  CHECK(s->shape == std::vector<uint64_t>{2, 4});
  CHECK(s->count == 8);
  CHECK(s->nan == 1);
  CHECK(s->pos_inf == 1);
  CHECK(s->neg_inf == 1);
  CHECK(s->zeros == 2);
  CHECK(s->min == -2);
  CHECK(s->max == 3);
  CHECK(s->mean() == Approx(2.0 / 5));
  CHECK(s->std() == Approx(std::sqrt(14.0 / 5 - 0.16)));
  REQUIRE(s->histogram.size() == kStatsBins);
  uint64_t total = 0;
  for (uint64_t c : s->histogram) total += c;
  CHECK(total == 5);
  CHECK(s->histogram.front() == 1);  // -2
  CHECK(s->histogram.back() == 1);   // 3, the maximum, in the last bin
  CHECK(stats_json_one(*s).find(R"("nan":1,"pos_inf":1,"neg_inf":1,"zeros":2)") != std::string::npos);
  CHECK(render_stats(*s).find("min -2  max 3") != std::string::npos);
  CHECK_FALSE(tensor_stats(o->model, o->files, "missing"));
}

TEST_CASE("stats: a GGUF block type's dequantized values, the same as the whole tensor's") {
  auto o = open_whole(read_file(fixture_path("gguf/valid/ggml_blocks.gguf")), "ggml_blocks.gguf");
  const auto names = stats_tensor_names(o->model);
  REQUIRE(names.size() == o->model.tensors.size());
  for (const auto& name : names) {
    auto s = tensor_stats(o->model, o->files, name);
    REQUIRE(s);
    // Independently: the whole tensor dequantized at once, summed here.
    auto plan = plan_tensor(o->model, name, DType::F32);
    REQUIRE(plan);
    VecSink sink;
    REQUIRE(execute_plan(*plan, o->files, sink));
    std::vector<float> all(sink.bytes.size() / 4);
    std::memcpy(all.data(), sink.bytes.data(), all.size() * 4);
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (float x : all) {
      sum += x;
      lo = std::min<double>(lo, x);
      hi = std::max<double>(hi, x);
    }
    CHECK(s->count == all.size());
    CHECK(s->min == lo);
    CHECK(s->max == hi);
    CHECK(s->mean() == Approx(sum / static_cast<double>(all.size())));
  }
}

TEST_CASE("stats through a Session, sans-IO: the same numbers as the native run") {
  const std::vector<float> v = {0.5f, 1.5f, -3.0f, 2.0f};
  const auto file = make_safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f32_bytes(v));
  Session s("");
  s.add_file("model.safetensors", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  CHECK(s.stats_names_json() == R"(["a"])");
  REQUIRE(s.plan_stats("a"));
  REQUIRE(s.stats_step_count() == 2);
  for (size_t i = 0; i < s.stats_step_count(); ++i) REQUIRE(feed(s, file, [&] { return s.run_stats_step(i); }));
  auto o = open_whole(file, "model.safetensors");
  auto native = tensor_stats(o->model, o->files, "a");
  REQUIRE(native);
  CHECK(s.stats_json() == stats_json_one(*native));
  CHECK(s.stats_text() == render_stats(*native));
  CHECK(s.stats_json().find(R"("min":-3,"max":2,"mean":0.25)") != std::string::npos);
}

TEST_CASE("stats: complex values are named as not described, not an error") {
  std::vector<uint8_t> data(16, 0);
  auto o = open_whole(make_safetensors(R"({"c":{"dtype":"C64","shape":[2],"data_offsets":[0,16]}})", data),
                      "model.safetensors");
  auto s = tensor_stats(o->model, o->files, "c");
  REQUIRE(s);
  CHECK(s->skipped == "C64 values are not described");
  CHECK(s->count == 0);
}

TEST_CASE("stats, page detail: head, 64 bins, heatmap cells and exact 64-bit extremes from the same passes") {
  // 3 × 2 F32: the heatmap is one cell per value.
  const std::vector<float> v = {1, -2, std::nanf(""), 4, 5, -6};
  auto o = open_whole(make_safetensors(R"({"w":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]}})", f32_bytes(v)),
                      "model.safetensors");
  auto run = StatsRun::start(o->model, "w", StatsDetail::page);
  REQUIRE(run);
  for (size_t i = 0; i < run->steps(); ++i) REQUIRE(run->step(i, o->files));
  const ValueStats& s = run->stats();
  CHECK(s.histogram.size() == kDetailBins);
  const std::string json = stats_json_one(s);
  CHECK(json.find(R"("values_dtype":"F32","head":[1,-2,"nan",4,5,-6])") != std::string::npos);
  CHECK(json.find(R"("heatmap":{"rows":3,"cols":2,"cell_rows":3,"cell_cols":2,"abs":[1,2,null,4,5,6],"signed":[1,-2,null,4,5,-6]})") !=
        std::string::npos);
  // The CLI's object is unchanged: no detail field, 20 bins.
  auto cli = tensor_stats(o->model, o->files, "w");
  REQUIRE(cli);
  CHECK(stats_json_one(*cli).find("head") == std::string::npos);
  CHECK(cli->histogram.size() == kStatsBins);
}

TEST_CASE("stats, page detail: a heatmap downsamples rows and columns as floor(i * cells / n)") {
  // 300 × 520: each value is its row * 1000 + column, so a cell's mean is known.
  const uint64_t rows = 300, cols = 520;
  std::vector<float> v(rows * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) v[r * cols + c] = static_cast<float>(r * 1000 + c);
  const std::string header = R"({"w":{"dtype":"F32","shape":[300,520],"data_offsets":[0,)" + std::to_string(v.size() * 4) + "]}}";
  auto o = open_whole(make_safetensors(header, f32_bytes(v)), "model.safetensors");
  auto run = StatsRun::start(o->model, "w", StatsDetail::page);
  REQUIRE(run);
  for (size_t i = 0; i < run->steps(); ++i) REQUIRE(run->step(i, o->files));
  const Heatmap& h = run->stats().heatmap;
  REQUIRE(h.cell_rows == kHeatmapCells);
  REQUIRE(h.cell_cols == kHeatmapCells);
  for (uint64_t i : {0u, 1u, 100u, 255u}) {
    for (uint64_t j : {0u, 3u, 200u, 255u}) {
      double sum = 0;
      uint64_t n = 0;
      for (uint64_t r = 0; r < rows; ++r) {
        for (uint64_t c = 0; c < cols; ++c) {
          if (r * kHeatmapCells / rows == i && c * kHeatmapCells / cols == j) {
            sum += v[r * cols + c];
            ++n;
          }
        }
      }
      const size_t k = static_cast<size_t>(i * kHeatmapCells + j);
      CHECK(h.count[k] == n);
      CHECK(h.sum[k] == sum);
    }
  }
}

TEST_CASE("stats, page detail: 64-bit integers exactly, and a skipped tensor's first bytes") {
  std::vector<uint8_t> data(32);
  const int64_t big = (int64_t{1} << 62) + 1, small = -(int64_t{1} << 60) - 3;
  std::memcpy(data.data(), &big, 8);
  std::memcpy(data.data() + 8, &small, 8);
  auto o = open_whole(make_safetensors(R"({"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
                                       R"("c":{"dtype":"C64","shape":[2],"data_offsets":[16,32]}})", data),
                      "model.safetensors");
  auto run = StatsRun::start(o->model, "i", StatsDetail::page);
  REQUIRE(run);
  for (size_t i = 0; i < run->steps(); ++i) REQUIRE(run->step(i, o->files));
  const std::string json = stats_json_one(run->stats());
  CHECK(json.find(R"("values_dtype":"I64","head":[")" + std::to_string(big) + R"(",")" + std::to_string(small) +
                  R"("],"int_min":")" + std::to_string(small) + R"(","int_max":")" + std::to_string(big) + R"(","heatmap":null)") !=
        std::string::npos);
  auto skipped = StatsRun::start(o->model, "c", StatsDetail::page);
  REQUIRE(skipped);
  REQUIRE(skipped->steps() == 1);
  REQUIRE(skipped->step(0, o->files));
  CHECK(stats_json_one(skipped->stats()).find(R"("head":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"bytes":16)") != std::string::npos);
}
