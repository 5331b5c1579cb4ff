#include "cli/convert_local.h"

#include <algorithm>
#include <filesystem>

#include "cli/output_file.h"
#include "cli/output_folder.h"
#include "convert/shard.h"
#include "session/forget.h"
#include "session/output.h"

namespace amn::cli {
namespace {

// Never write over one of the inputs, even with force: inputs are read-only. A folder
// target must not hold one either (replacing it would delete it).
Status check_not_an_input(const LocalModel& local, const std::string& target, bool folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dest = fs::weakly_canonical(fs::absolute(target, ec), ec);
  if (!dest.has_filename()) dest = dest.parent_path();  // "out/" is the folder "out"
  for (size_t i = 0; i < local.files->count(); ++i) {
    auto input = fs::path(local.folder) / local.files->name(i);
    if (fs::equivalent(input, target, ec)) return output_is_input(target);
    if (!folder) continue;
    const fs::path in = fs::weakly_canonical(fs::absolute(input, ec), ec);
    auto [d, _] = std::mismatch(dest.begin(), dest.end(), in.begin(), in.end());
    if (d == dest.end()) return output_holds_input(target, local.files->name(i));
  }
  return {};
}

Status write_file(OutputFolder& folder, const std::string& name, const std::string& text) {
  AMN_ASSIGN(auto file, folder.open(name));
  AMN_TRY(file->write({reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  return file->commit();
}

// Shards, index and `extra` files (name, text) into a temporary folder, renamed into
// place when all are written.
Result<Written> write_folder(LocalModel& local, const ConvertRequest& request, const ShardedPlan& plan,
                             const std::string& target, ExecuteHooks hooks,
                             const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  AMN_ASSIGN(auto folder, OutputFolder::create(target, request.force, request.sync));
  const uint64_t total = plan.output_bytes();
  uint64_t before = 0;  // bytes of the shards already written
  auto progress = std::move(hooks.progress);
  if (progress) hooks.progress = [&](uint64_t done, uint64_t) { progress(before + done, total); };
  Written out{target, true, plan.shards.size(), 0, plan.output_bytes(), {}};
  for (const auto& s : plan.shards) {
    AMN_ASSIGN(auto file, folder->open(s.name));
    out.files.push_back(s.name);
    AMN_TRY(execute_plan(s.plan, *local.files, *file, hooks));
    AMN_TRY(file->commit());
    before += s.plan.output_bytes();
    out.tensors += s.plan.tensors.size();
  }
  if (!plan.index_json.empty()) {
    AMN_TRY(write_file(*folder, std::string(kShardIndexName), plan.index_json));
    out.files.emplace_back(kShardIndexName);
  }
  for (const auto& [name, text] : extra) {
    AMN_TRY(write_file(*folder, name, text));
    out.files.push_back(name);
  }
  if (hooks.cancelled && hooks.cancelled()) return make_error(ErrorCode::cancelled, "interrupted");
  AMN_TRY(folder->commit());
  return out;
}

}  // namespace

Result<OutputTarget> output_target(const LocalModel& local, const ConvertRequest& request, Surface surface) {
  AMN_ASSIGN(auto layout, output_layout(request, local.model.sharded, Destination::path, surface));
  OutputTarget out;
  out.folder = layout.folder;
  out.path = request.output.empty() ? default_output(request, local.place, layout.folder, &local.model) : request.output;
  AMN_TRY(check_not_an_input(local, out.path, out.folder));
  return out;
}

Result<Written> write_conversion(LocalModel& local, const ConvertRequest& request, const ConvertOptions& options,
                                 const OutputTarget& target, const ExecuteHooks& hooks) {
  if (target.folder) {
    AMN_ASSIGN(auto plan, plan_shards(local.model, options, shard_options(request, target.path)));
    return write_folder(local, request, plan, target.path, hooks);
  }
  AMN_ASSIGN(auto plan, plan_convert(local.model, options));
  AMN_ASSIGN(auto sink, OutputFile::create(target.path, request.force, request.sync));
  AMN_TRY(execute_plan(plan, *local.files, *sink, hooks));
  AMN_TRY(sink->commit());
  return Written{target.path, false, 1, plan.tensors.size(), plan.output_bytes(), {}};
}

Result<Written> write_forget(LocalModel& local, const ConvertRequest& request, ForgetPlan& forget,
                             const OutputTarget& target, const ExecuteHooks& hooks) {
  Plan& plan = forget.plan;
  AMN_TRY(prepare_plan(plan, *local.files));
  if (!target.folder) {
    AMN_ASSIGN(auto sink, OutputFile::create(target.path, request.force, request.sync));
    AMN_TRY(execute_plan(plan, *local.files, *sink, hooks));
    AMN_TRY(sink->commit());
    return Written{target.path, false, 1, plan.tensors.size(), plan.output_bytes(), {}};
  }
  AMN_ASSIGN(auto files, forget_output_files(forget, request, target.path));
  std::vector<std::pair<std::string, std::string>> extra;
  if (std::string config = forget_config_json(local.model, *forget.forgetter); !config.empty()) {
    extra.emplace_back("config.json", std::move(config));
  }
  return write_folder(local, request, files, target.path, hooks, extra);
}

}  // namespace amn::cli
