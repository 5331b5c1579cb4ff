// Lists a model's tensors: inspect_model <file | folder | index.json | ollama:name>
#include <anamnesis/anamnesis.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inspect_model <model>\n");
    return 2;
  }
  auto model = anamnesis::Model::open(argv[1]);
  if (!model) {
    std::fprintf(stderr, "error [%s]: %s\n", model.error().code.c_str(), model.error().message.c_str());
    return 1;
  }
  const auto tensors = model->tensors();
  std::printf("%s, %zu tensors\n", model->format().c_str(), tensors.size());
  for (const auto& t : tensors) {
    std::string shape;
    for (auto d : t.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    std::printf("%s %s [%s] %llu bytes", t.name.c_str(), t.dtype.c_str(), shape.c_str(),
                static_cast<unsigned long long>(t.bytes));
    if (!t.scheme.empty()) std::printf(" (%s: %s)", t.scheme.c_str(), t.variant.c_str());
    std::printf("\n");
  }
  return 0;
}
