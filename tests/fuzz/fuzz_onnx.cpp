// The ONNX importer on arbitrary bytes: parse, opset gate, conversion (initializers, external
// data), libonnx's checker, shape inference with every schema's checks, then the inference
// fusions `tandem run` applies. The model's folder holds weights.bin (1 KiB of floats) so that
// external data inside it can be read, and the importer must refuse locations outside it.
// Under libFuzzer most mutations are structural (onnx_mutator.h).
#include <vector>

#include "fuzz_support.h"
#include "ir/fuse.h"
#include "onnx/importer.h"

#ifdef TANDEM_LIBFUZZER
#include "onnx_mutator.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return tandem::fuzz::mutate_model(data, size, max_size, seed);
}
#endif

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<float> weights(256);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) / 16;
  tandem::fuzz::write_scratch("weights.bin", weights.data(), weights.size() * sizeof(float));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("model.onnx", data, size);
  return tandem::fuzz::expect_clean([&] {
    tandem::ImportOptions options;
    options.dims["batch"] = 2;
    tandem::ImportedModel model = tandem::import_onnx(path, options);
    tandem::fuse_for_inference(model.graph);
  });
}
