#include "formats/pth/parse.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/bytes.h"
#include "core/checked.h"
#include "core/text.h"
#include "formats/pickle/vm.h"
#include "formats/pth/describe.h"
#include "formats/pth/torch_globals.h"
#include "formats/pth/walk.h"
#include "formats/zip/zip.h"

namespace amn {
namespace {

using pth::FoundTensor;
using pth::StorageLayout;
using pth::StorageRef;

// torch/serialization.py MAGIC_NUMBER and PROTOCOL_VERSION.
constexpr uint8_t kMagicLe[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocolVersion = 1001;
// Small ZIP records (byteorder, version) are read whole up to this size.
constexpr uint64_t kSmallRecord = 64;

Error parse_error(std::string message, uint64_t offset = kNoOffset) {
  return make_error(ErrorCode::parse, "pth: " + std::move(message), offset);
}

// Where one storage's bytes are.
struct StoragePlace {
  uint64_t offset = 0;        // absolute offset of element 0 (compressed data when deflated)
  uint64_t bytes = 0;         // the storage's size in bytes (inflated)
  bool deflated = false;
  uint64_t compressed = 0;
  uint32_t crc32 = 0;
};

// A tensor view over its storage: checks the view stays inside it, and spells the
// element type, shape and strides as TensorRecord wants them (complex128 as F64 pairs).
Result<TensorRecord> make_record(const FoundTensor& t, const StoragePlace& place, uint32_t file, bool big_endian) {
  const pth::StorageType& type = *t.storage.type;
  TensorRecord r;
  r.name = t.name;
  r.file = file;
  r.big_endian = big_endian;
  r.dtype = type.dtype;
  uint64_t elements = 1, span = 1;  // span: storage elements from the first to the last element, inclusive
  bool contiguous = true;
  uint64_t expect = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    const uint64_t n = t.shape[d];
    auto e = checked_mul(elements, n);
    if (!e) return parse_error("tensor '" + t.name + "': element count overflows");
    elements = *e;
    if (n > 1) {
      auto reach = checked_mul(n - 1, t.strides[d]);
      auto s = reach ? checked_add(span, *reach) : std::nullopt;
      if (!s) return parse_error("tensor '" + t.name + "': strides overflow");
      span = *s;
      if (t.strides[d] != expect) contiguous = false;
    }
    expect = checked_mul(expect, n).value_or(0);
  }
  if (elements == 0) span = 0;
  const auto end = checked_add(t.storage_offset, span);
  const uint64_t storage_elems = place.bytes / type.itemsize;
  if (!end || *end > storage_elems) {
    return parse_error("tensor '" + t.name + "': elements [" + num(t.storage_offset) + ", " + num(end.value_or(UINT64_MAX)) +
                       ") reach past its storage '" + t.storage.key + "' of " + num(storage_elems) + " elements");
  }
  r.shape = t.shape;
  r.elements = elements;
  if (!contiguous) r.strides = t.strides;
  uint64_t skip = t.storage_offset * type.itemsize;
  r.nbytes = span * type.itemsize;
  if (type.layout == StorageLayout::complex128 || type.layout == StorageLayout::complex32) {
    // No complex128 DType: (re, im) pairs of the component type, a trailing dim of 2.
    r.shape.push_back(2);
    r.elements *= 2;
    if (!r.strides.empty()) {
      for (auto& s : r.strides) s *= 2;
      r.strides.push_back(1);
    }
  }
  if (place.deflated) {
    r.deflated = true;
    r.offset = place.offset;
    r.nbytes = place.compressed;
    r.inflated_size = place.bytes;
    r.inflated_skip = skip;
    r.crc32 = place.crc32;
  } else {
    r.offset = place.offset + skip;
  }
  return r;
}

// Runs one pickle of a legacy file's prefix; `more` says the window may be short.
Result<pickle::Pickle> run_at(std::span<const uint8_t> window, uint64_t at, bool more, const ParseLimits& limits,
                              pickle::AllowFn allowed) {
  pickle::Options o;
  o.allowed = allowed;
  o.base_offset = at;
  o.more_may_follow = more;
  return pickle::run(window.subspan(static_cast<size_t>(at)), limits, o);
}

// What a finished pickle holds, charged against max_total_bytes after it ran (it ran
// within what was left: the budget's remaining()).
uint64_t pickle_bytes(const pickle::Pickle& p) {
  return p.values.capacity() * sizeof(pickle::Record) + p.text.capacity() + p.slots.capacity() * sizeof(uint32_t) +
         p.globals.size() * sizeof(pickle::GlobalRef);
}

ParseLimits within(const ParseLimits& limits, const MemoryBudget& budget) {
  ParseLimits out = limits;
  out.max_total_bytes = budget.remaining();
  return out;
}

Status charge_records(MemoryBudget& budget, const Model& model) {
  for (const auto& t : model.tensors) {
    AMN_TRY(budget.charge(sizeof(TensorRecord) + t.name.size() + (t.shape.size() + t.strides.size()) * sizeof(uint64_t),
                          "the record of tensor '" + t.name + "'"));
  }
  return {};
}

bool is_int(const pickle::Pickle& p, int64_t want) {
  const auto& v = p.at(p.root);
  return v.kind == pickle::Kind::integer && v.integer == want;
}

// Every persistent id of the pickle, by key (a storage may be reached by no tensor).
Result<std::map<std::string, StorageRef>> all_storages(const pickle::Pickle& p, bool legacy) {
  std::map<std::string, StorageRef> out;
  for (uint32_t i = 0; i < p.values.size(); ++i) {
    if (p.at(i).kind != pickle::Kind::persistent_id) continue;
    AMN_ASSIGN(StorageRef s, pth::storage_ref(p, i, legacy));
    auto [it, fresh] = out.emplace(s.key, s);
    if (!fresh && (it->second.type != s.type || it->second.numel != s.numel)) {
      // torch refuses to save one storage as two types; a file that does is not torch's.
      return parse_error("storage '" + s.key + "' is named with two different types or sizes");
    }
  }
  return out;
}

void sort_and_name(Model& model) {
  std::stable_sort(model.tensors.begin(), model.tensors.end(),
                   [](const TensorRecord& a, const TensorRecord& b) { return a.offset < b.offset; });
  // Paths are unique in a dict, but {"a.b": x, "a": {"b": y}} flattens to one name twice.
  std::map<std::string, int> seen;
  for (auto& t : model.tensors) {
    const int n = seen[t.name]++;
    if (n) {
      model.warnings.push_back("two tensors are named '" + t.name + "'; the later is shown as '" + t.name + "#" + std::to_string(n + 1) + "'");
      t.name += "#" + std::to_string(n + 1);
    }
  }
}

void add_complex_warning(Model& model, const std::vector<FoundTensor>& tensors) {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.storage.type->layout == StorageLayout::complex128 || t.storage.type->layout == StorageLayout::complex32;
  if (n) {
    model.warnings.push_back(num(n) + " complex128/complex32 tensor(s) are shown as F64/F16 with a trailing dimension of 2 (real, imaginary)");
  }
}

Result<Model> parse_legacy(FileSet& files, uint32_t file, const ParseLimits& limits) {
  const uint64_t size = files.size(file);
  uint64_t window_size = std::min(size, kLegacyPthFirstWindow);
  for (;;) {
    AMN_ASSIGN(auto window, files.read(file, 0, window_size));
    const bool more = window_size < size;
    // magic, protocol version, sys info, the object, the storage keys: five pickles.
    pickle::Pickle parts[5];
    uint64_t at = 0;
    bool short_window = false;
    MemoryBudget budget(limits, "pth");
    AMN_TRY(budget.charge(window.size(), "the pickles' bytes", 0));
    for (int k = 0; k < 5; ++k) {
      auto r = run_at(window, at, more, within(limits, budget), pth::torch_global_allowed);
      if (!r && r.error().code == ErrorCode::need_bytes) {
        short_window = true;
        break;
      }
      if (!r) return std::move(r).error();
      parts[k] = std::move(r).value();
      AMN_TRY(budget.charge(pickle_bytes(parts[k]), "pickle " + num(k + 1) + " of 5", at));
      at += parts[k].end;
    }
    if (short_window) {
      window_size = std::min(size, std::max(window_size * 4, window_size + 1));
      continue;  // a SparseSource answers need_bytes for the rest; an mmap reads on
    }
    const auto& magic = parts[0].at(parts[0].root);
    if (magic.kind != pickle::Kind::big_integer || magic.text != std::string(reinterpret_cast<const char*>(kMagicLe), 10)) {
      return parse_error("the first pickle is not torch's magic number", 0);
    }
    if (!is_int(parts[1], kLegacyProtocolVersion)) {
      return parse_error("legacy protocol version is not " + num(kLegacyProtocolVersion), parts[0].end);
    }
    pth::Facts facts;
    facts.legacy = true;
    facts.version = num(kLegacyProtocolVersion);
    facts.pickle_protocol = parts[3].protocol;
    facts.sys_info_json = pth::value_json(parts[2], parts[2].root);
    bool little = true;
    const auto& sys = parts[2].at(parts[2].root);
    if (sys.kind == pickle::Kind::dict) {
      for (size_t i = 0; i + 1 < sys.entries.size(); i += 2) {
        const auto& key = parts[2].at(sys.entries[i]);
        const auto& val = parts[2].at(sys.entries[i + 1]);
        if (key.kind == pickle::Kind::string && key.text == "little_endian" && val.kind == pickle::Kind::boolean) little = val.boolean;
      }
    }
    facts.byteorder = little ? "little" : "big";
    const pickle::Pickle& obj = parts[3];
    AMN_ASSIGN(auto storages, all_storages(obj, true));
    AMN_ASSIGN(auto walked, pth::walk_checkpoint(obj, true, limits));

    // The raw storages follow in the order of the key list: an 8-byte element count,
    // then the elements. Offsets follow from the sizes the persistent ids declare.
    const auto& keys = parts[4].at(parts[4].root);
    if (keys.kind != pickle::Kind::list) return parse_error("the storage key list is not a list", at);
    std::map<std::string, StoragePlace> places;
    std::vector<std::pair<uint64_t, uint64_t>> headers;  // offset, expected count
    uint64_t pos = at;
    for (uint32_t item : keys.items) {
      const auto& key = parts[4].at(item);
      if (key.kind != pickle::Kind::string) return parse_error("a storage key is not a string", at);
      auto it = storages.find(std::string(key.text));
      if (it == storages.end()) return parse_error("storage '" + std::string(key.text) + "' is listed but no persistent id names it", at);
      const auto bytes = checked_mul(it->second.numel, it->second.type->itemsize);
      const auto data = checked_add(pos, 8);
      const auto next = bytes && data ? checked_add(*data, *bytes) : std::nullopt;
      if (!next || *next > size) {
        return parse_error("storage '" + std::string(key.text) + "' (" + num(it->second.numel) + " elements) runs past the end of the file", pos);
      }
      if (!places.emplace(std::string(key.text), StoragePlace{*data, *bytes}).second) return parse_error("storage '" + std::string(key.text) + "' is listed twice", at);
      headers.emplace_back(pos, it->second.numel);
      pos = *next;
    }
    if (pos != size) {
      // torch reads exactly the listed storages; trailing bytes are not its writing.
      return parse_error(num(size - pos) + " bytes follow the last storage", pos);
    }
    // Every header in one round (for a remote file: one request batch).
    std::vector<ByteRange> missing;
    for (const auto& [off, count] : headers) {
      auto h = files.read(file, off, 8);
      if (!h) {
        if (h.error().code != ErrorCode::need_bytes) return std::move(h).error();
        for (const auto& r : h.error().need_bytes) missing.push_back(r);
        continue;
      }
      const uint64_t v = little ? load_le64(h->data()) : load_be(h->data(), 8);
      if (v != count) {
        return parse_error("storage header says " + num(v) + " elements, its persistent id " + num(count), off);
      }
    }
    if (!missing.empty()) {
      Error e = make_error(ErrorCode::need_bytes, "pth: legacy storage headers");
      e.need_bytes = coalesce_ranges(std::move(missing));  // nearby headers in one range
      return e;
    }

    Model model;
    model.format = ModelFormat::pth;
    model.files.push_back({files.name(file), size, at});
    model.big_endian = !little;
    for (const auto& t : walked.tensors) {
      auto it = places.find(t.storage.key);
      if (it == places.end()) return parse_error("tensor '" + t.name + "': storage '" + t.storage.key + "' is not in the key list");
      AMN_ASSIGN(auto rec, make_record(t, it->second, file, !little));
      model.tensors.push_back(std::move(rec));
    }
    add_complex_warning(model, walked.tensors);
    sort_and_name(model);
    AMN_TRY(charge_records(budget, model));
    facts.globals = obj.globals;
    facts.values = std::move(walked.values);
    facts.values_omitted = walked.values_omitted;
    facts.storages = places.size();
    model.details_json = pth::details_json(facts);
    model.details_text = pth::details_text(facts);
    return model;
  }
}

// Reads the small records in one round: each read that misses adds its ranges.
struct Batch {
  std::vector<ByteRange> missing;
  template <class T>
  bool take(Result<T>& r, Status& fatal) {
    if (r) return true;
    if (r.error().code == ErrorCode::need_bytes) {
      for (const auto& x : r.error().need_bytes) missing.push_back(x);
    } else if (fatal.ok()) {
      fatal = r.error();
    }
    return false;
  }
};

Result<Model> parse_zip(FileSet& files, uint32_t file, const ParseLimits& limits_in) {
  const ParseLimits limits = effective_limits(limits_in);
  AMN_ASSIGN(auto archive, zip::read_archive(files, file, limits, 0));
  if (archive.entries.empty()) return parse_error("the ZIP archive is empty");
  // torch's reader takes the archive name from the first entry's top folder.
  const std::string& first = archive.entries[0].name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0) return parse_error("ZIP entry '" + first + "' is not inside a folder: not a torch.save archive");
  const std::string prefix = first.substr(0, slash + 1);
  const zip::Entry* pkl = archive.find(prefix + "data.pkl");
  if (!pkl) return parse_error("no " + prefix + "data.pkl in the archive: not a torch.save archive");
  if (pkl->uncompressed_size > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, "pth: data.pkl of " + num(pkl->uncompressed_size) + " bytes exceeds max_single_alloc (" +
                                            num(limits.max_single_alloc) + ")");
  }
  MemoryBudget budget(limits, "pth", archive.memory);
  AMN_TRY(budget.charge(pkl->uncompressed_size, "data.pkl's bytes", pkl->local_header_offset));
  const zip::Entry* order = archive.find(prefix + "byteorder");
  const zip::Entry* version = archive.find(prefix + "version");
  if (!version) version = archive.find(prefix + ".data/version");

  Batch batch;
  Status fatal;
  auto pkl_bytes = zip::read_prefix(files, file, *pkl, pkl->uncompressed_size, limits);
  batch.take(pkl_bytes, fatal);
  Result<std::vector<uint8_t>> order_bytes = std::vector<uint8_t>{'l', 'i', 't', 't', 'l', 'e'};
  if (order) {
    order_bytes = zip::read_prefix(files, file, *order, kSmallRecord, limits);
    batch.take(order_bytes, fatal);
  }
  Result<std::vector<uint8_t>> version_bytes = std::vector<uint8_t>{};
  if (version) {
    version_bytes = zip::read_prefix(files, file, *version, kSmallRecord, limits);
    batch.take(version_bytes, fatal);
  }
  if (!fatal) return std::move(fatal).error();
  if (!batch.missing.empty()) {
    Error e = make_error(ErrorCode::need_bytes, "pth: data.pkl and records");
    e.need_bytes = coalesce_ranges(std::move(batch.missing));
    return e;
  }
  pth::Facts facts;
  facts.prefix = prefix;
  facts.byteorder.assign(order_bytes->begin(), order_bytes->end());
  if (facts.byteorder != "little" && facts.byteorder != "big") {
    return parse_error("the byteorder record is neither 'little' nor 'big'", order ? order->data_offset : kNoOffset);
  }
  facts.version.assign(version_bytes->begin(), version_bytes->end());
  while (!facts.version.empty() && (facts.version.back() == '\n' || facts.version.back() == '\r')) facts.version.pop_back();

  pickle::Options o;
  o.allowed = pth::torch_global_allowed;
  // Offsets in errors are file offsets only when data.pkl is stored, not deflated.
  o.base_offset = pkl->method == zip::Method::stored ? pkl->data_offset : 0;
  AMN_ASSIGN(auto p, pickle::run(*pkl_bytes, within(limits, budget), o));
  AMN_TRY(budget.charge(pickle_bytes(p), "data.pkl's values", o.base_offset));
  if (p.end != pkl_bytes->size()) return parse_error(num(pkl_bytes->size() - p.end) + " bytes follow data.pkl's STOP", o.base_offset + p.end);
  facts.pickle_protocol = p.protocol;
  AMN_ASSIGN(auto storages, all_storages(p, false));
  AMN_ASSIGN(auto walked, pth::walk_checkpoint(p, false, limits));

  const bool big = facts.byteorder == "big";
  std::map<std::string, StoragePlace> places;
  for (const auto& [key, s] : storages) {
    const zip::Entry* e = archive.find(prefix + "data/" + key);
    if (!e) return parse_error("storage '" + key + "' has no entry " + prefix + "data/" + key);
    const auto bytes = checked_mul(s.numel, s.type->itemsize);
    if (!bytes || *bytes > e->uncompressed_size) {
      return parse_error("storage '" + key + "' declares " + num(s.numel) + " elements of " + num(s.type->itemsize) +
                         " bytes, but its entry holds " + num(e->uncompressed_size) + " bytes", e->data_offset);
    }
    StoragePlace place{e->data_offset, *bytes};
    if (e->method == zip::Method::deflate) {
      place.deflated = true;
      place.compressed = e->compressed_size;
      place.crc32 = e->crc32;
      place.bytes = *bytes;
    }
    places.emplace(key, place);
  }
  Model model;
  model.format = ModelFormat::pth;
  model.files.push_back({files.name(file), files.size(file), 0});
  model.big_endian = big;
  for (const auto& t : walked.tensors) {
    AMN_ASSIGN(auto rec, make_record(t, places.at(t.storage.key), file, big));
    if (rec.deflated) rec.inflated_size = archive.find(prefix + "data/" + t.storage.key)->uncompressed_size;
    model.tensors.push_back(std::move(rec));
  }
  add_complex_warning(model, walked.tensors);
  sort_and_name(model);
  AMN_TRY(charge_records(budget, model));
  facts.globals = p.globals;
  facts.values = std::move(walked.values);
  facts.values_omitted = walked.values_omitted;
  facts.storages = places.size();
  model.details_json = pth::details_json(facts);
  model.details_text = pth::details_text(facts);
  return model;
}

}  // namespace

bool looks_like_legacy_pth(std::span<const uint8_t> head) {
  if (head.size() < 15 || head[0] != 0x80 || head[1] < 2 || head[1] > 5) return false;
  size_t at = 2;
  if (head[at] == 0x95) at += 9;  // FRAME (protocol 4+)
  return head.size() >= at + 12 && head[at] == 0x8a && head[at + 1] == 10 && std::memcmp(&head[at + 2], kMagicLe, 10) == 0;
}

Result<Model> parse_pth(FileSet& files, uint32_t file, const ParseLimits& limits) {
  const uint64_t size = files.size(file);
  AMN_ASSIGN(auto head, files.read(file, 0, std::min<uint64_t>(size, 32)));
  if (head.size() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) return parse_zip(files, file, limits);
  if (head.size() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 5 && head[3] == 6) return parse_zip(files, file, limits);
  if (looks_like_legacy_pth(head)) return parse_legacy(files, file, limits);
  if (head.size() >= 2 && head[0] == 0x80) {
    return parse_error("a pickle, but not a torch.save file (no torch magic number); only torch.save checkpoints are read", 0);
  }
  return parse_error("neither a torch.save ZIP archive nor a legacy torch.save file", 0);
}

}  // namespace amn
