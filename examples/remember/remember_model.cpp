// Reads one tensor as F32 and prints its first values: remember_model <model> <tensor> [count]
// A quantized weight's name gives its dequantized values; a GGUF block tensor's, ggml's.
#include <anamnesis/anamnesis.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: remember_model <model> <tensor> [count]\n");
    return 2;
  }
  const size_t count = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 4;
  auto model = anamnesis::Model::open(argv[1]);
  if (!model) {
    std::fprintf(stderr, "error [%s]: %s\n", model.error().code.c_str(), model.error().message.c_str());
    return 1;
  }
  auto tensor = model->tensor(argv[2], "f32");
  if (!tensor) {
    std::fprintf(stderr, "error [%s]: %s\n", tensor.error().code.c_str(), tensor.error().message.c_str());
    return 1;
  }
  // Little-endian F32, as the library returns every tensor (this runs on a little-endian host).
  const size_t n = tensor->data.size() / sizeof(float);
  std::printf("%s %s, %zu values:", tensor->name.c_str(), tensor->dtype.c_str(), n);
  for (size_t i = 0; i < n && i < count; ++i) {
    float v;
    std::memcpy(&v, tensor->data.data() + i * sizeof v, sizeof v);
    std::printf(" %.6g", v);
  }
  std::printf("\n");
  return 0;
}
