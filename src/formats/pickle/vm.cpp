// The public entry points of the pickle VM (vm.h) over its machine (machine.h).
#include "formats/pickle/vm.h"

#include "formats/pickle/machine.h"

namespace amn::pickle {

Result<Pickle> run(std::span<const uint8_t> bytes, const ParseLimits& limits, const Options& options) {
  internal::Machine machine(bytes, limits, options);
  return machine.run();
}

std::string global_name(const GlobalRef& g) { return g.module + "." + g.name; }

Value Pickle::at(uint32_t i) const {
  const Record& r = values[i];
  Value v;
  v.kind = r.kind;
  v.depth = r.depth;
  const auto children = [&](Record::Span s) {
    return s.size == 0 ? std::span<const uint32_t>() : std::span<const uint32_t>(slots.data() + s.at, s.size);
  };
  switch (r.kind) {
    case Kind::none: break;
    case Kind::boolean: v.boolean = r.flag != 0; break;
    case Kind::integer: v.integer = r.integer; break;
    case Kind::floating: v.floating = r.floating; break;
    case Kind::big_integer:
      if (r.flag) v.name = "decimal";
      [[fallthrough]];
    case Kind::string: case Kind::bytes:
      v.text = std::string_view(text).substr(static_cast<size_t>(r.text.at), static_cast<size_t>(r.text.size));
      break;
    case Kind::global:
      v.text = globals[r.global].module;
      v.name = globals[r.global].name;
      break;
    case Kind::persistent_id: v.callee = r.node.callee; break;
    case Kind::tuple: case Kind::list: case Kind::dict: case Kind::set: case Kind::frozenset: case Kind::object:
      v.items = children(r.node.items);
      v.entries = children(r.node.entries);
      v.callee = r.node.callee;
      v.args = r.node.args;
      v.kwargs = r.node.kwargs;
      v.state = r.node.state;
      break;
  }
  return v;
}

}  // namespace amn::pickle
