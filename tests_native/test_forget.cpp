// forget through the session, sans-IO (the path the npm package and the page drive):
// prepares and pieces fed exactly the bytes they ask for, the output's tensors equal to
// the producers' (fixtures/lethe), the choice of tensors, and Python's float repr.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <simdjson.h>

#include "core/json.h"
#include "kernels/lethe/bnb_encode.h"
#include "session/open.h"
#include "schemes/forget_nvfp4.h"
#include "session/session.h"
#include "session_support.h"
#include "support.h"

using namespace amn;
using amn::test::fixture_path;
using amn::test::feed;
using amn::test::read_file;

namespace {

// The whole output of a forget planned from `request`, as the JS side writes it.
std::vector<uint8_t> forget_bytes(const std::string& input, const std::string& request, Session& s) {
  const auto file = read_file(fixture_path(input));
  s.add_file("model.safetensors", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  REQUIRE(s.plan_forget(request));
  return amn::test::planned_output(s, file);
}

// name -> bytes of a safetensors file in memory.
std::map<std::string, std::vector<uint8_t>> tensors_of(const std::vector<uint8_t>& file) {
  FileSet set;
  set.add("x.safetensors", std::make_unique<MemorySource>(std::span<const uint8_t>(file)));
  auto m = open_model(set, {});
  REQUIRE(m);
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& t : m->tensors) {
    out[t.name] = std::vector<uint8_t>(file.begin() + t.offset, file.begin() + t.offset + t.nbytes);
  }
  return out;
}

}  // namespace

TEST_CASE("forget, sans-IO: double-quantized NF4 equals bitsandbytes' bytes", "[forget]") {
  Session s("");
  const auto out = forget_bytes("lethe/bnb/nf4_dq.input.safetensors", R"({"scheme":"nf4","doubleQuant":true})", s);
  const auto got = tensors_of(out);
  const auto want = tensors_of(read_file(fixture_path("lethe/bnb/nf4_dq.safetensors")));
  REQUIRE(got.size() == want.size());
  for (const auto& [name, bytes] : want) {
    INFO(name);
    REQUIRE(got.count(name));
    CHECK(got.at(name) == bytes);
  }
  const std::string report = s.forget_report_json();
  CHECK(report.find("\"quantized\":5") != std::string::npos);
}

TEST_CASE("forget nf4 --double-quant --torch-threads: the offset torch computes with that many threads", "[forget]") {
  // From 32768 absmax values torch's mean sums one chunk per thread: find a count whose
  // F32 mean changes between 1 and 3 threads (torch_mean_f32 is checked against torch in
  // test_lethe_bnb.cpp), then make a weight with exactly that many 32-element blocks whose
  // absmax are those values (each block's first element; the rest zeros).
  std::vector<float> values(70000);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(1e-3f, 5.0f);
  for (auto& v : values) v = dist(rng);
  uint64_t blocks = 0;
  for (uint64_t n = 32768; n < values.size() && !blocks; ++n) {
    if (lethe::torch_mean_f32(values.data(), n, 1) != lethe::torch_mean_f32(values.data(), n, 3)) blocks = n;
  }
  REQUIRE(blocks > 0);
  std::vector<float> weight(blocks * 32, 0.0f);
  for (uint64_t b = 0; b < blocks; ++b) weight[b * 32] = values[b];
  std::vector<uint8_t> data(weight.size() * 4);
  std::memcpy(data.data(), weight.data(), data.size());
  const auto file = amn::test::make_safetensors(
      R"({"model.layers.0.mlp.up_proj.weight":{"dtype":"F32","shape":[)" + std::to_string(blocks) + R"(,32],"data_offsets":[0,)" +
          std::to_string(data.size()) + "]}}",
      data);
  auto offset_of = [&](const std::string& request) {
    Session s("");
    s.add_file("model.safetensors", file.size());
    REQUIRE(feed(s, file, [&] { return s.parse(); }));
    REQUIRE(s.plan_forget(request));
    const auto out = tensors_of(amn::test::planned_output(s, file));
    const auto& state = out.at("model.layers.0.mlp.up_proj.weight.quant_state.bitsandbytes__nf4");
    const std::string json(state.begin(), state.end());
    const auto at = json.find("\"nested_offset\": ");
    REQUIRE(at != std::string::npos);
    return json.substr(at + 17, json.find_first_of(",}", at) - at - 17);
  };
  const std::string one = offset_of(R"({"scheme":"nf4","blocksize":32,"doubleQuant":true})");
  const std::string three = offset_of(R"({"scheme":"nf4","blocksize":32,"doubleQuant":true,"torchThreads":3})");
  CHECK(one == python_float_repr(lethe::torch_mean_f32(values.data(), blocks, 1)));
  CHECK(three == python_float_repr(lethe::torch_mean_f32(values.data(), blocks, 3)));
  CHECK(one != three);
  // Only where it matters: with double quantization.
  Session s("");
  s.add_file("model.safetensors", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  auto refused = s.plan_forget(R"({"scheme":"nf4","torchThreads":2})");
  REQUIRE(!refused);
  CHECK(refused.error().message == "torchThreads: the thread count matters only with double quantization");
}

TEST_CASE("forget: --skip, --only and --strict choose the tensors", "[forget]") {
  Session a("");
  forget_bytes("lethe/bnb/int8.input.safetensors", R"({"scheme":"int8","skip":["*.up_proj.*"]})", a);
  CHECK(a.forget_report_json().find("\"kept_because\":\"--skip\"") != std::string::npos);
  Session b("");
  forget_bytes("lethe/bnb/int8.input.safetensors", R"({"scheme":"int8","only":"*.down_proj.*"})", b);
  CHECK(b.forget_report_json().find("\"quantized\":1,") != std::string::npos);
  // fp8-block cannot hold a 37x99 weight (transformers refuses it): kept with a warning, or
  // refused with strict.
  Session c("");
  forget_bytes("lethe/bnb/int8.input.safetensors", R"({"scheme":"fp8-block"})", c);
  CHECK(c.forget_report_json().find("kept 'model.layers.0.mlp.up_proj.weight' as stored") != std::string::npos);
  Session d("");
  const auto file = read_file(fixture_path("lethe/bnb/int8.input.safetensors"));
  d.add_file("model.safetensors", file.size());
  REQUIRE(feed(d, file, [&] { return d.parse(); }));
  auto st = d.plan_forget(R"({"scheme":"fp8-block","strict":true})");
  REQUIRE_FALSE(st);
  CHECK(st.error().code == ErrorCode::invalid_argument);
  CHECK(d.plan_forget(R"({"scheme":"nf4","blocksize":48})").error().message.rfind("blocksize 48", 0) == 0);
  CHECK(d.plan_forget(R"({"scheme":"mlx","bits":7})").error().message.rfind("bits 7: mlx takes", 0) == 0);
  CHECK(d.plan_forget(R"({"scheme":"int8","groupSize":64})").error().message.rfind("groupSize: only mlx", 0) == 0);
  CHECK(d.plan_forget(R"({"scheme":"q9"})").error().code == ErrorCode::invalid_argument);
}

TEST_CASE("python_float_repr writes what Python's repr() writes", "[forget]") {
  CHECK(python_float_repr(0.0) == "0.0");
  CHECK(python_float_repr(-0.0) == "-0.0");
  CHECK(python_float_repr(1.0) == "1.0");
  CHECK(python_float_repr(100.0) == "100.0");
  CHECK(python_float_repr(0.1) == "0.1");
  CHECK(python_float_repr(1e-05) == "1e-05");
  CHECK(python_float_repr(0.0001) == "0.0001");
  CHECK(python_float_repr(1.5e16) == "1.5e+16");
  CHECK(python_float_repr(1234567890123456.0) == "1234567890123456.0");
  CHECK(python_float_repr(static_cast<double>(0.05374461f)) == "0.0537446103990078");  // float32 -> double
  CHECK(python_float_repr(5e-324) == "5e-324");
  CHECK(python_float_repr(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(python_float_repr(-2.5e-7) == "-2.5e-07");
}

TEST_CASE("nvfp4 fused sets: llm-compressor's get_fused_names, natural order", "[forget][nvfp4]") {
  const std::vector<std::string> names = {
      "model.layers.10.self_attn.q_proj.weight", "model.layers.2.self_attn.v_proj.weight",
      "model.layers.2.self_attn.q_proj.weight",  "model.layers.10.self_attn.k_proj.weight",
      "model.layers.2.self_attn.k_proj.weight",  "model.layers.10.self_attn.v_proj.weight",
      "model.layers.2.mlp.up_proj.weight",       "model.layers.2.mlp.gate_proj.weight",
      "model.layers.2.mlp.down_proj.weight",     "experts.0.w3.weight",
      "experts.0.w1.weight",                     "model.layers.2.self_attn.o_proj.weight",
  };
  auto sets = nvfp4_fused_sets(names);
  REQUIRE(sets);
  // layer 2 before layer 10 (natural order), then gate/up, then w1/w3; o_proj and down_proj alone
  const std::vector<std::vector<size_t>> want = {{2, 4, 1}, {0, 3, 5}, {7, 6}, {10, 9}};
  CHECK(sets.value() == want);
  // a q_proj whose k/v never come before the next q_proj: the producer raises
  auto bad = nvfp4_fused_sets({"a.0.attn.q_proj.weight", "a.1.attn.q_proj.weight", "a.1.attn.k_proj.weight"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::unsupported);
}

TEST_CASE("forget into a folder: shards by size keep each weight's companions with it", "[forget][shard]") {
  const auto file = read_file(fixture_path("lethe/bnb/nf4_dq.input.safetensors"));
  // The one-file output, as a single sink receives it.
  Session whole("");
  whole.add_file("model.safetensors", file.size());
  REQUIRE(feed(whole, file, [&] { return whole.parse(); }));
  REQUIRE(whole.plan_forget(R"({"scheme":"nf4","doubleQuant":true})", nullptr, "single"));
  const auto want = tensors_of(amn::test::planned_output(whole, file));

  // One byte a shard: every tensor kept as stored is a shard, every weight with its
  // absmax, quant_map, nested_* and quant_state another.
  Session s("");
  s.add_file("model.safetensors", file.size());
  REQUIRE(feed(s, file, [&] { return s.parse(); }));
  REQUIRE(s.plan_forget(R"({"scheme":"nf4","doubleQuant":true,"maxShardSize":1})", nullptr, "per_file"));
  for (size_t i = 0; i < s.prepare_count(); ++i) REQUIRE(feed(s, file, [&] { return s.run_prepare(i); }));
  REQUIRE(s.finish_prepared());
  simdjson::dom::parser parser;
  const std::string info_text = s.shards_info_json();
  simdjson::dom::element info;
  REQUIRE(!parser.parse(info_text).get(info));
  simdjson::dom::array files;
  REQUIRE(!info["files"].get_array().get(files));
  REQUIRE(files.size() == want.size() - 5 * 5);  // 5 weights, each with 5 companions
  std::map<std::string, std::vector<uint8_t>> got;
  size_t k = 0;
  for (auto f : files) {
    REQUIRE(s.select_shard(k++));
    std::vector<uint8_t> out = s.output_header();
    for (size_t i = 0; i < s.piece_count(); ++i) {
      REQUIRE(feed(s, file, [&] { return s.run_piece(i); }));
      out.insert(out.end(), s.piece_output().begin(), s.piece_output().end());
      s.release_data();
    }
    uint64_t planned = 0;
    REQUIRE(!f["output_bytes"].get_uint64().get(planned));
    CHECK(out.size() == planned);
    const auto tensors = tensors_of(out);
    std::set<std::string> weights;  // "<name>.weight" of every tensor in the shard
    for (const auto& [name, bytes] : tensors) {
      const auto at = name.find(".weight");
      weights.insert(at == std::string::npos ? name : name.substr(0, at + 7));
      got[name] = bytes;
    }
    CHECK(weights.size() == 1);
  }
  CHECK(got == want);
  std::string_view index;
  REQUIRE(!info["index"].get_string().get(index));
  CHECK(index.find("\"weight_map\"") != std::string_view::npos);
}
