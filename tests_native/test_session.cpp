// The session layer: typed requests, the output policy, the command line, the registry.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "session/command_line.h"
#include "session/output.h"
#include "session/registry.h"
#include "session/request.h"
#include "session/session.h"
#include "support.h"

using namespace amn;

TEST_CASE("convert requests parse once, with option names per surface") {
  auto r = convert_request_from_json(R"({"to":"gguf","dtype":"F16","castAll":true,"ggufKv":["a=1"]})", Verb::convert, Surface::api);
  REQUIRE(r);
  CHECK(r->to == OutputFormat::gguf);
  CHECK(r->dtype == DType::F16);
  CHECK(r->cast_all);
  CHECK(r->gguf_kv == std::vector<std::string>{"a=1"});
  auto bad = convert_request_from_json(R"({"dtype":"q4"})", Verb::convert, Surface::api);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "dtype: unknown dtype 'q4' (bf16, f16 or f32)");
  auto both = convert_request_from_json(R"({"shards":1,"maxShardSize":"5GB"})", Verb::convert, Surface::api);
  REQUIRE_FALSE(both);
  CHECK(both.error().message == "maxShardSize and shards 1 contradict each other");
  CHECK_FALSE(convert_request_from_json(R"({"bogus":1})", Verb::convert, Surface::api));
  CHECK(convert_request_from_json(R"({"to":"onnx"})", Verb::convert, Surface::api).error().code == ErrorCode::unsupported);
  // The JSON a request is written as reads back as the same request.
  auto again = convert_request_from_json(convert_request_json(*r), Verb::convert, Surface::api);
  REQUIRE(again);
  CHECK(again->to == r->to);
  CHECK(again->dtype == r->dtype);
  CHECK(again->gguf_kv == r->gguf_kv);
}

TEST_CASE("limits: camelCase or snake_case, positive numbers only") {
  auto l = limits_from_json(R"({"maxItemCount":7,"max_total_bytes":1000})", Surface::api);
  REQUIRE(l);
  CHECK(l->max_item_count == 7);
  CHECK(l->max_total_bytes == 1000);
  CHECK_FALSE(limits_from_json(R"({"maxItemCount":0})", Surface::api));
  CHECK_FALSE(limits_from_json(R"({"maxWhatever":1})", Surface::api));
}

TEST_CASE("output names: one stem rule, one suffix rule") {
  CHECK(output_stem("model.safetensors") == "model");
  CHECK(output_stem("model.safetensors.index.json") == "model");
  CHECK(output_stem("pytorch_model.bin.index.json") == "pytorch_model");
  CHECK(output_stem("llama-00001-of-00003.gguf") == "llama");
  CHECK(output_stem("weights.npz") == "weights");
  CHECK(output_stem("sha256-abc") == "sha256-abc");
  ConvertRequest r;
  r.dtype = DType::BF16;
  CHECK(default_output(r, input_place("dir/model.safetensors", false, ""), false) == "dir/model-bf16.safetensors");
  CHECK(default_output(r, input_place("model.pth", false, ""), false) == "./model-bf16.safetensors");
  CHECK(default_output(r, input_place("shards/", true, "/w/shards"), true) == "/w/shards-bf16");
  r.dtype.reset();
  r.to = OutputFormat::gguf;
  CHECK(default_output(r, input_place("https://h/x/tiny%20mlp.safetensors?download=1", false, ""), false) == "./tiny mlp-converted.gguf");
}

TEST_CASE("output layout: sharded inputs give folders unless asked otherwise") {
  ConvertRequest r;
  CHECK(output_layout(r, true, Destination::path, Surface::cli)->folder);
  CHECK_FALSE(output_layout(r, false, Destination::path, Surface::cli)->folder);
  r.output = "one.safetensors";
  CHECK_FALSE(output_layout(r, true, Destination::path, Surface::cli)->folder);
  r.shards = ShardMode::input;
  auto refused = output_layout(r, true, Destination::path, Surface::cli);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "one.safetensors names a file: a sharded output is a folder (or pass --shards 1)");
  CHECK_FALSE(output_layout(r, true, Destination::single, Surface::api));
  r.to = OutputFormat::gguf;
  CHECK(output_layout(r, true, Destination::path, Surface::api).error().code == ErrorCode::unsupported);
}

TEST_CASE("the command line: typed requests, help, usage errors") {
  auto c = parse_command_line({"convert", "m.gguf", "--to", "safetensors", "--dtype", "f16", "--max-total-bytes", "2GB", "-q"});
  REQUIRE(c.kind == CommandLine::Kind::run);
  CHECK(c.verb == Verb::convert);
  CHECK(c.open.input == "m.gguf");
  CHECK(c.open.limits.max_total_bytes == 2'000'000'000);
  CHECK(c.convert.dtype == DType::F16);
  CHECK(c.convert.quiet);
  auto remember = parse_command_line({"dequantize", "m.safetensors"});
  REQUIRE(remember.kind == CommandLine::Kind::run);
  CHECK(remember.verb == Verb::remember);
  CHECK(parse_command_line({"bogus"}).text == "unknown subcommand: bogus");
  CHECK(parse_command_line({"inspect"}).kind == CommandLine::Kind::usage_error);
  auto help = parse_command_line({"--help"});
  REQUIRE(help.kind == CommandLine::Kind::help);
  for (const FormatRow& row : format_rows()) {
    if (!row.forms.empty()) CHECK(help.text.find(std::string(row.label)) != std::string::npos);
  }
  auto error = parse_command_line({"convert", "m", "--to", "gguf", "--max-shard-size", "1GB"});
  CHECK(error.kind == CommandLine::Kind::error);
  CHECK(error.error.code == ErrorCode::unsupported);
}

TEST_CASE("a session names the files of every convert plan, one file too") {
  const std::vector<uint8_t> data(8, 0);
  const auto file = amn::test::make_safetensors(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data);
  Session s("{}");
  const uint32_t id = s.add_file("weights.safetensors", file.size());
  auto* copy = static_cast<uint8_t*>(std::malloc(file.size()));
  std::memcpy(copy, file.data(), file.size());
  REQUIRE(s.add_bytes(id, 0, SparseSource::Buffer(copy, [](uint8_t* p) { std::free(p); }), file.size()));
  REQUIRE(s.parse());
  CHECK(s.shards_info_json() == "null");
  REQUIRE(s.plan_convert(std::string_view(R"({"shards":1})")));
  const std::string files = s.shards_info_json();
  CHECK_THAT(files, Catch::StartsWith(R"({"files":[{"name":"model.safetensors","tensors":1,"output_bytes":)"));
  CHECK_THAT(files, Catch::Contains(R"("index":null)"));
  REQUIRE(s.select_shard(0));
  REQUIRE(s.plan_tensor("w", ""));
  CHECK(s.shards_info_json() == "null");
}
