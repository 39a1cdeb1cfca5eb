#pragma once
#include <map>
#include <string>

#include "ir/tensor.h"

namespace tandem {

// Writes the ONNX model at `source` to `destination` with the initializers named in `values`
// holding those values (same dtype and shape; a trained model's weights), every other node and
// attribute as it was. Weights the source keeps in external files are embedded. Throws
// InputError (subject: the file) for a source that cannot be read, a name it has no initializer
// for, a value of another dtype or shape, or a model past protobuf's 2 GiB.
void write_with_initializers(const std::string& source, const std::string& destination,
                             const std::map<std::string, Tensor>& values);

}  // namespace tandem
