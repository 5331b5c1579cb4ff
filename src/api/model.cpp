// anamnesis::Model: opening, listing, reports and one-tensor reads, over the same
// functions `amn` uses (src/cli's local files, the session's requests, src/report).
#include <string>

#include "api/impl.h"
#include "convert/execute.h"
#include "convert/plan.h"
#include "core/limits.h"
#include "kernels/cast.h"
#include "report/report.h"
#include "session/request.h"

namespace anamnesis {
namespace {

// The header spells the defaults out (it includes no internal header); they must stay the core's.
static_assert(Limits{}.max_single_alloc == amn::ParseLimits{}.max_single_alloc);
static_assert(Limits{}.max_total_bytes == amn::ParseLimits{}.max_total_bytes);
static_assert(Limits{}.max_item_count == amn::ParseLimits{}.max_item_count);
static_assert(Limits{}.max_decompression_ratio == amn::ParseLimits{}.max_decompression_ratio);

// Through the session's limits_from_json, so a bad limit is refused with the words every
// surface uses ("limit maxItemCount must be a positive number").
amn::Result<amn::ParseLimits> core_limits(const Limits& limits) {
  amn::ParseLimits given;
  given.max_single_alloc = limits.max_single_alloc;
  given.max_total_bytes = limits.max_total_bytes;
  given.max_item_count = limits.max_item_count;
  given.max_decompression_ratio = limits.max_decompression_ratio;
  return amn::limits_from_json(amn::limits_json(given), amn::Surface::api);
}

// A one-tensor plan's bytes, collected in memory (the plan has no header).
class MemorySink final : public amn::Sink {
 public:
  explicit MemorySink(std::vector<uint8_t>& out) : out_(out) {}
  amn::Status write(std::span<const uint8_t> bytes) override {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
    return {};
  }

 private:
  std::vector<uint8_t>& out_;
};

TensorInfo info_of(const amn::TensorRecord& t) {
  return {t.name, std::string(amn::stored_type_name(t)), t.shape, t.elements, t.nbytes, {}, {}, {}};
}

TensorInfo info_of(const amn::LogicalTensor& l) {
  return {l.name, std::string(amn::dtype_name(l.natural)), l.shape, l.elements, l.stored_bytes, l.scheme, l.variant,
          l.error};
}

}  // namespace

Error public_error(const amn::Error& e) {
  return {std::string(amn::error_code_name(e.code)), e.message,
          e.offset == amn::kNoOffset ? int64_t{-1} : static_cast<int64_t>(e.offset)};
}

Result<Model> Model::open(const std::string& path, const Limits& limits) {
  auto parse_limits = core_limits(limits);
  if (!parse_limits) return public_error(parse_limits.error());
  auto local = amn::cli::open_local(path, *parse_limits);
  if (!local) return public_error(local.error());
  auto impl = std::make_shared<Impl>();
  impl->local = std::move(local).value();
  return Model(std::move(impl));
}

std::string Model::format() const { return std::string(amn::model_format_name(impl_->local.model.format)); }

// The order and grouping of `amn inspect`'s tensor table (report/text.cpp).
std::vector<TensorInfo> Model::tensors() const {
  const amn::Model& m = impl_->local.model;
  std::vector<TensorInfo> out;
  std::vector<bool> listed(m.logical.size(), false);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    if (m.is_part(i)) {
      const auto l = static_cast<size_t>(m.part_of[i]);
      if (!listed[l]) out.push_back(info_of(m.logical[l]));
      listed[l] = true;
    } else if (!m.is_consumed(i)) {
      out.push_back(info_of(m.tensors[i]));
    }
  }
  return out;
}

std::string Model::info_json() const { return amn::model_info_json(impl_->local.model); }
std::string Model::inspect_text() const { return amn::render_inspect(impl_->local.model); }
std::string Model::parse_text() const { return amn::render_parse(impl_->local.model); }

Result<Tensor> Model::tensor(const std::string& name, const std::string& to) const {
  std::optional<amn::DType> dtype;
  if (!to.empty()) {
    auto t = amn::float_target(to, amn::OptionId::to, amn::Surface::api);
    if (!t) return public_error(t.error());
    dtype = *t;
  }
  auto plan = amn::plan_tensor(impl_->local.model, name, dtype);
  if (!plan) return public_error(plan.error());
  const amn::TensorSpec& spec = plan->tensors.front();
  Tensor out{spec.name, std::string(amn::dtype_name(spec.dtype)), spec.shape, {}};
  out.data.reserve(static_cast<size_t>(plan->data_bytes));
  MemorySink sink(out.data);
  std::lock_guard<std::mutex> lock(impl_->reading);
  if (auto st = amn::execute_plan(*plan, *impl_->local.files, sink); !st) return public_error(st.error());
  return out;
}

const char* version() { return AMN_VERSION; }

const char* implementation() {
  static const std::string name(amn::active_impl_name());  // built once, thread-safely
  return name.c_str();
}

}  // namespace anamnesis
