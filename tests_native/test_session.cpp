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
  // "{}" (no limit given) and " {} " (read by the JSON parser) give the defaults.
  for (const char* none : {"{}", " {} "}) {
    auto d = limits_from_json(none, Surface::api);
    REQUIRE(d);
    CHECK(d->max_item_count == ParseLimits{}.max_item_count);
    CHECK(d->max_decompression_ratio == ParseLimits{}.max_decompression_ratio);
  }
  CHECK_FALSE(limits_from_json("{", Surface::api));
}

TEST_CASE("limits_json writes only what differs from the defaults, and reads back") {
  CHECK(limits_json(ParseLimits{}) == "{}");
  ParseLimits given;
  given.max_item_count = 5;
  given.max_decompression_ratio = 2.5;
  CHECK(limits_json(given) == R"({"maxItemCount":5,"maxDecompressionRatio":2.5})");
  auto back = limits_from_json(limits_json(given), Surface::api);
  REQUIRE(back);
  CHECK(back->max_item_count == 5);
  CHECK(back->max_decompression_ratio == 2.5);
  CHECK(back->max_single_alloc == ParseLimits{}.max_single_alloc);
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
  CHECK(default_output(r, input_place("dir/model.safetensors", false, ""), false, nullptr) == "dir/model-bf16.safetensors");
  CHECK(default_output(r, input_place("model.pth", false, ""), false, nullptr) == "./model-bf16.safetensors");
  CHECK(default_output(r, input_place("shards/", true, "/w/shards"), true, nullptr) == "/w/shards-bf16");
  r.dtype.reset();
  r.to = OutputFormat::gguf;
  CHECK(default_output(r, input_place("https://h/x/tiny%20mlp.safetensors?download=1", false, ""), false, nullptr) ==
        "./tiny mlp-converted.gguf");
}

namespace {

Result<Model> safetensors_of(const std::string& header, size_t data_bytes) {
  return test::open_memory(test::make_safetensors(header, std::vector<uint8_t>(data_bytes)));
}

}  // namespace

// Issue 18, item 6: remember without --to loses no precision, and its default name says so.
TEST_CASE("output names: remember without a target is lossless, <stem>.safetensors where that is no input") {
  ConvertRequest r;
  r.verb = Verb::remember;
  auto f32 = safetensors_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("i":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}})", 16);
  auto mixed = safetensors_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})", 12);
  auto npy = test::open_memory(test::read_file(test::fixture_path("numpy/valid/f2_le.npy")), "f2_le.npy");
  auto gguf = test::open_memory(test::read_file(test::fixture_path("gguf/valid/v2.gguf")), "v2.gguf");
  REQUIRE(f32);
  REQUIRE(mixed);
  REQUIRE(npy);
  REQUIRE(gguf);
  // Not safetensors: <stem>.safetensors cannot be the input.
  CHECK(default_output(r, input_place("dir/f2_le.npy", false, ""), false, &*npy) == "dir/f2_le.safetensors");
  CHECK(default_output(r, input_place("v2.gguf", false, ""), false, &*gguf) == "./v2.safetensors");
  // Safetensors: the one floating dtype every output has, else -remembered (integers do not count).
  CHECK(default_output(r, input_place("dir/model.safetensors", false, ""), false, &*f32) == "dir/model-f32.safetensors");
  CHECK(default_output(r, input_place("dir/model.safetensors", false, ""), false, &*mixed) ==
        "dir/model-remembered.safetensors");
  // A folder output beside a folder input would be that folder.
  CHECK(default_output(r, input_place("ggufs/", true, "/w/ggufs"), true, &*gguf) == "/w/ggufs-f32");
  CHECK(default_output(r, input_place("ggufs/", true, "/w/ggufs"), false, &*gguf) == "ggufs/ggufs.safetensors");
  CHECK(default_output(r, input_place("dir/model.safetensors", false, ""), false, nullptr) ==
        "dir/model-remembered.safetensors");
  // A target names the output as before; so does convert without one.
  r.dtype = DType::F16;
  CHECK(default_output(r, input_place("dir/f2_le.npy", false, ""), false, &*npy) == "dir/f2_le-f16.safetensors");
  r.dtype.reset();
  r.verb = Verb::convert;
  CHECK(default_output(r, input_place("dir/f2_le.npy", false, ""), false, &*npy) == "dir/f2_le-converted.safetensors");
  // The JS surfaces get the same names from the JSON call, with the model.
  const std::string plan = output_plan_json(
      R"({"request":{"verb":"remember"},"surface":"cli","place":{"path":"dir/f2_le.npy","isFolder":false,"absolute":""}})",
      &*npy);
  CHECK(plan == R"({"ok":true,"folder":false,"single":false,"sharded":false,"target":"dir/f2_le.safetensors","name":"f2_le.safetensors"})");
  CHECK_THAT(output_plan_json(R"({"request":{"verb":"remember"},"place":{"entry":"model.safetensors"}})", &*mixed),
             Catch::Contains(R"("name":"model-remembered.safetensors")"));
  // A request that names a scheme and no verb is a forget: the core decides, not npm.
  CHECK_THAT(output_plan_json(R"({"request":{"scheme":"nf4","dtype":null},"place":{"entry":"model.safetensors"}})", &*mixed),
             Catch::Contains(R"("name":"model-nf4")"));
}

TEST_CASE("the command line: remember has no default target") {
  auto c = parse_command_line({"remember", "m.pth"});
  REQUIRE(c.kind == CommandLine::Kind::run);
  CHECK_FALSE(c.convert.dtype.has_value());
  CHECK(parse_command_line({"remember", "m.pth", "--to", "f16"}).convert.dtype == DType::F16);
  CHECK_THAT(command_line_json(c), Catch::Contains(R"("dtype":null)"));
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
