// Converts a model to BF16 safetensors and reads the result back:
//   convert_model <model> <output> [bf16 | f16 | f32]
// A sharded input (a folder, or its index) gives a folder of shards with the same
// boundaries and an index, written atomically: all of it appears at <output>, or nothing.
#include <anamnesis/anamnesis.hpp>

#include <cstdio>

static int fail(const anamnesis::Error& e) {
  std::fprintf(stderr, "error [%s]: %s\n", e.code.c_str(), e.message.c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: convert_model <model> <output> [bf16 | f16 | f32]\n");
    return 2;
  }
  auto model = anamnesis::Model::open(argv[1]);
  if (!model) return fail(model.error());
  anamnesis::ConvertOptions options;
  options.output = argv[2];
  options.dtype = argc == 4 ? argv[3] : "bf16";
  options.overwrite = true;
  auto written = model->convert(options);
  if (!written) return fail(written.error());
  std::printf("wrote %s: %zu files, %llu tensors, %llu bytes\n", written->path.c_str(), written->files.size(),
              static_cast<unsigned long long>(written->tensors), static_cast<unsigned long long>(written->bytes));
  for (const auto& f : written->files) std::printf("  %s\n", f.c_str());

  // The output opens like any model; each tensor holds the input's values in the new dtype.
  auto output = anamnesis::Model::open(written->path);
  if (!output) return fail(output.error());
  size_t same = 0, tensors = 0;
  for (const auto& t : model->tensors()) {
    auto a = model->tensor(t.name, options.dtype);
    auto b = output->tensor(t.name);
    if (!a) return fail(a.error());
    if (!b) return fail(b.error());
    ++tensors;
    same += a->dtype == b->dtype && a->shape == b->shape && a->data == b->data;
  }
  std::printf("read back: %zu of %zu tensors identical\n", same, tensors);
  return same == tensors ? 0 : 1;
}
