#pragma once
#include <string>

#include "ir/tensor.h"

namespace tandem {

// Reads a NumPy .npy file (format 1.0-3.0, C order). Throws InputError (subject: the file) for
// anything else, checking the header against the file size before allocating.
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace tandem
