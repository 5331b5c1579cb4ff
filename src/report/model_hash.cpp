#include "report/model_hash.h"

#include <cstdio>

#include "core/json.h"
#include "report/report.h"
#include "report/value_stats.h"

namespace amn {
namespace {

// llama.cpp examples/gguf-hash/gguf-hash.cpp UUID_NAMESPACE_LLAMA_CPP:
// uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp').
constexpr uint8_t kLlamaCppNamespace[16] = {0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d,
                                            0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5};

// RFC 4122 §4.3: the first 16 bytes of the SHA-1, version 5, variant 10.
std::string uuid_v5(const std::array<uint8_t, 20>& sha1) {
  uint8_t u[16];
  for (int i = 0; i < 16; ++i) u[i] = sha1[static_cast<size_t>(i)];
  u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x50);
  u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);
  const std::string h = hex(u);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

void take(TensorHash& out, auto& state) {
  out.sha256 = hex(state.sha256.finish());
  out.sha1 = hex(state.sha1.finish());
  out.xxh64 = hex64(state.xxh64.finish());
}

std::string line(std::string_view kind, const std::string& digest, const std::string& name) {
  std::string k(kind);
  k.resize(std::max<size_t>(k.size(), 8), ' ');  // printf's %-8s
  return k + "  " + digest + "  " + name + "\n";
}

}  // namespace

Result<HashRun> HashRun::start(const Model& model, HashOf of) {
  HashRun run;
  run.result_.of = of;
  if (of == HashOf::values) {
    for (const std::string& name : stats_tensor_names(model)) {
      AMN_ASSIGN(auto plan, plan_tensor(model, name, DType::F32));
      const auto t = static_cast<uint32_t>(run.names_.size());
      const auto p = static_cast<int32_t>(run.plans_.size());
      run.names_.push_back(name);
      run.result_.model.bytes += plan.data_bytes;
      if (plan.pieces.empty()) run.chunks_.push_back({t, 0, 0, 0, true});  // an empty tensor
      for (size_t k = 0; k < plan.pieces.size(); ++k) {
        run.chunks_.push_back({t, 0, 0, 0, k + 1 == plan.pieces.size(), p, k});
      }
      run.plans_.push_back(std::move(plan));
    }
  }
  if (of == HashOf::stored) {
    for (size_t t = 0; t < model.tensors.size(); ++t) {
      const TensorRecord& r = model.tensors[t];
      if (!r.size_known) {
        return make_error(ErrorCode::unsupported, "tensor '" + r.name + "' has a type of unknown size (" +
                                                      std::string(stored_type_name(r)) + "): its bytes cannot be told");
      }
      run.names_.push_back(r.name);
      uint64_t at = 0;
      do {  // an empty tensor still gets its one (empty) chunk: its hash is the empty input's
        const uint64_t n = std::min(kHashChunk, r.nbytes - at);
        run.chunks_.push_back({static_cast<uint32_t>(t), r.file, r.offset + at, n, at + n == r.nbytes});
        at += n;
      } while (at < r.nbytes);
      run.result_.model.bytes += r.nbytes;
    }
  }
  run.model_.emplace();
  run.uuid_.emplace();
  run.uuid_->update(kLlamaCppNamespace);
  if (run.chunks_.empty()) run.finish_model();  // no tensor: the empty input's digests
  return run;
}

void HashRun::finish_model() {
  take(result_.model, *model_);
  result_.uuid = uuid_v5(uuid_->finish());
}

Status HashRun::step(size_t i, FileSet& files, SchemeInputCache* cache) {
  if (i >= chunks_.size()) return make_error(ErrorCode::invalid_argument, "no such step");
  const Chunk& c = chunks_[i];
  std::span<const uint8_t> bytes;
  if (c.plan >= 0) {
    const Plan& plan = plans_[static_cast<size_t>(c.plan)];
    buffer_.resize(plan.pieces[c.piece].out_length);
    AMN_TRY(run_piece(plan, c.piece, files, buffer_, cache));
    bytes = buffer_;
  } else if (c.length > 0) {
    AMN_ASSIGN(bytes, files.read(c.file, c.offset, c.length));
  }
  if (!tensor_) tensor_.emplace();  // the first chunk of a tensor
  for (State* s : {&*tensor_, &*model_}) {
    s->sha256.update(bytes);
    s->sha1.update(bytes);
    s->xxh64.update(bytes);
  }
  uuid_->update(bytes);
  tensor_bytes_ += bytes.size();
  if (c.last) {
    TensorHash h;
    h.name = names_[c.tensor];
    h.bytes = tensor_bytes_;
    tensor_bytes_ = 0;
    take(h, *tensor_);
    tensor_.reset();
    result_.tensors.push_back(std::move(h));
  }
  if (i + 1 == chunks_.size()) finish_model();
  return {};
}

Result<ModelHash> model_hash(const Model& model, FileSet& files, HashOf of) {
  AMN_ASSIGN(auto run, HashRun::start(model, of));
  SchemeInputCache cache;  // a GPTQ / AWQ layer's pieces share its inputs
  for (size_t i = 0; i < run.steps(); ++i) AMN_TRY(run.step(i, files, &cache));
  return run.result();
}

std::string hash_json(const ModelHash& h) {
  JsonWriter w;
  w.begin_object().key("dequantized").value(h.of == HashOf::values).key("tensors").begin_array();
  for (const auto& t : h.tensors) {
    w.begin_object().key("name").value(t.name).key("bytes").value(t.bytes).key("sha256").value(t.sha256);
    w.key("xxh64").value(t.xxh64).key("sha1").value(t.sha1).end_object();
  }
  w.end_array().key("model").begin_object().key("tensors").value(static_cast<uint64_t>(h.tensors.size()));
  w.key("bytes").value(h.model.bytes).key("sha256").value(h.model.sha256).key("xxh64").value(h.model.xxh64);
  w.key("sha1").value(h.model.sha1).key("uuid").value(h.uuid).end_object();
  return w.end_object().take();
}

std::string render_hash(const ModelHash& h) {
  std::string out = "sha256                                                            xxh64             tensor\n";
  for (const auto& t : h.tensors) out += t.sha256 + "  " + t.xxh64 + "  " + t.name + "\n";
  out += h.model.sha256 + "  " + h.model.xxh64 + "  (model: " + std::to_string(h.tensors.size()) + " tensors, " +
         grouped(h.model.bytes) + (h.of == HashOf::values ? " bytes of values" : " bytes") + "; uuid " + h.uuid + ")\n";
  return out;
}

std::string render_gguf_hash(const ModelHash& h, const std::string& path) {
  std::string out;
  for (const auto& t : h.tensors) {
    const std::string name = path + ":" + t.name;
    out += line("xxh64", t.xxh64, name) + line("sha1", t.sha1, name) + line("sha256", t.sha256, name);
  }
  out += line("xxh64", h.model.xxh64, path) + line("sha1", h.model.sha1, path) + line("sha256", h.model.sha256, path);
  return out + line("uuid", h.uuid, path);
}

}  // namespace amn
