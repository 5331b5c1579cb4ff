// anamnesis::Model::convert: the options become the session's typed request through its
// JSON form, the one the npm API sends (session/request.h), so they are checked, and
// refused in the same words, as there; the output is named, refused and written by the
// same code as `amn convert` (cli/convert_local.h).
#include <filesystem>

#include "api/impl.h"
#include "cli/convert_local.h"
#include "core/json.h"
#include "session/output.h"
#include "session/request.h"

namespace anamnesis {
namespace {

// Everything but the output path, which is set on the request afterwards: a path is any
// bytes, and the request JSON takes only UTF-8.
std::string request_json(const ConvertOptions& o) {
  amn::JsonWriter w;
  w.begin_object().key("to").value(o.to).key("dtype").string_or_null(o.dtype).key("castAll").value(o.cast_all);
  w.key("shards");
  switch (o.shards) {
    case Shards::automatic: w.null(); break;
    case Shards::one: w.value(1); break;
    case Shards::input: w.value("input"); break;
  }
  w.key("maxShardSize");
  if (o.max_shard_bytes > 0) w.value(o.max_shard_bytes);
  else w.null();
  w.key("splitMaxSize");
  if (o.split_max_bytes > 0) w.value(o.split_max_bytes);
  else w.null();
  w.key("splitMaxTensors");
  if (o.split_max_tensors > 0) w.value(o.split_max_tensors);
  else w.null();
  w.key("ggufKv").strings(o.gguf_kv).key("ggufMetadata").string_or_null(o.gguf_metadata);
  w.key("force").value(o.overwrite).key("sync").value(o.sync).end_object();
  return w.take();
}

}  // namespace

Result<ConvertResult> Model::convert(const ConvertOptions& options) const {
  auto request = amn::convert_request_from_json(request_json(options), amn::Verb::convert, amn::Surface::api);
  if (!request) return public_error(request.error());
  request->output = options.output;
  auto core_options = amn::convert_options(*request);
  if (!core_options) return public_error(core_options.error());

  std::lock_guard<std::mutex> lock(impl_->reading);
  amn::cli::LocalModel& local = impl_->local;
  auto target = amn::cli::output_target(local, *request, amn::Surface::api);
  if (!target) return public_error(target.error());
  amn::ExecuteHooks hooks;
  bool stop = false;
  if (options.progress) {
    hooks.progress = [&](uint64_t done, uint64_t total) { stop = stop || !options.progress(done, total); };
    hooks.cancelled = [&] { return stop; };
  }
  auto written = amn::cli::write_conversion(local, *request, *core_options, *target, hooks);
  if (!written) {
    // The writers word a refusal for the command line ("use --force"); say it as this API does.
    if (written.error().code == amn::ErrorCode::exists) return public_error(amn::output_exists(target->path, amn::Surface::api));
    return public_error(written.error());
  }
  ConvertResult out{written->path, written->folder, {}, written->tensors, written->bytes};
  if (!written->folder) out.files.push_back(written->path);
  for (const auto& name : written->files) out.files.push_back((std::filesystem::path(written->path) / name).string());
  return out;
}

}  // namespace anamnesis
