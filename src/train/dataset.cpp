#include "train/dataset.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "ir/error.h"
#include "util/npy.h"

namespace tandem::train {
namespace fs = std::filesystem;
namespace {

// `stem`.npy, or its shards stem-K.npy in numeric order of K.
std::vector<fs::path> files_of(const fs::path& dir, const std::string& stem) {
  if (fs::exists(dir / (stem + ".npy"))) return {dir / (stem + ".npy")};
  std::vector<std::pair<long long, fs::path>> shards;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = stem + "-";
    if (name.size() <= prefix.size() + 4 || name.compare(0, prefix.size(), prefix) != 0 ||
        name.substr(name.size() - 4) != ".npy")
      continue;
    const std::string number = name.substr(prefix.size(), name.size() - prefix.size() - 4);
    if (number.empty() || !std::all_of(number.begin(), number.end(), ::isdigit) ||
        number.size() > 12)
      continue;
    shards.push_back({std::stoll(number), entry.path()});
  }
  std::sort(shards.begin(), shards.end());
  std::vector<fs::path> files;
  for (const auto& [index, path] : shards) files.push_back(path);
  return files;
}

Tensor read_joined(const fs::path& dir, const std::string& stem) {
  const std::vector<fs::path> files = files_of(dir, stem);
  if (files.empty())
    throw InputError(dir.string(), "has no " + stem + ".npy (nor shards " + stem + "-0.npy, ...)");
  std::vector<Tensor> parts;
  for (const fs::path& file : files) {
    Tensor part = read_npy(file.string());
    if (part.rank() == 0)
      throw InputError(file.string(), "holds a scalar, not samples along axis 0");
    if (!parts.empty()) {
      const Tensor& first = parts.front();
      const bool same_rows =
          part.rank() == first.rank() &&
          std::equal(part.shape().begin() + 1, part.shape().end(), first.shape().begin() + 1);
      if (part.dtype() != first.dtype() || !same_rows) {
        throw InputError(file.string(), "is " + std::string(dtype_name(part.dtype())) + " " +
                                            shape_str(part.shape()) + ", the first shard " +
                                            std::string(dtype_name(first.dtype())) + " " +
                                            shape_str(first.shape()));
      }
    }
    parts.push_back(std::move(part));
  }
  if (parts.size() == 1) return parts.front();
  Shape shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& part : parts) shape[0] += part.dim(0);
  Tensor joined = Tensor::allocate(parts.front().dtype(), shape);
  size_t offset = 0;
  for (const Tensor& part : parts) {
    std::memcpy(static_cast<char*>(joined.raw()) + offset, part.raw(), part.nbytes());
    offset += part.nbytes();
  }
  return joined;
}

Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices) {
  Shape shape = source.shape();
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor batch = Tensor::allocate(source.dtype(), shape);
  const size_t row = source.dim(0) ? source.nbytes() / static_cast<size_t>(source.dim(0)) : 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(static_cast<char*>(batch.raw()) + i * row,
                static_cast<const char*>(source.raw()) + static_cast<size_t>(indices[i]) * row,
                row);
  }
  return batch;
}

}  // namespace

std::vector<Tensor> DataSplit::batch_inputs(const std::vector<int64_t>& indices) const {
  std::vector<Tensor> batch;
  for (const Tensor& input : inputs) batch.push_back(gather_rows(input, indices));
  return batch;
}

Tensor DataSplit::batch_labels(const std::vector<int64_t>& indices) const {
  return gather_rows(labels, indices);
}

DataSplit read_split(const std::string& dir, const std::vector<std::string>& input_names) {
  if (!fs::is_directory(dir)) throw InputError(dir, "no such folder");
  DataSplit split;
  split.path = dir;
  for (const std::string& name : input_names) {
    std::string stem = name;
    if (input_names.size() == 1 && !files_of(dir, "x").empty()) stem = "x";
    split.inputs.push_back(read_joined(dir, stem));
    split.files.push_back(files_of(dir, stem).front().string());
  }
  split.labels = read_joined(dir, "y");
  for (size_t i = 0; i < split.inputs.size(); ++i) {
    if (split.inputs[i].dim(0) != split.labels.dim(0)) {
      throw InputError(dir, "input '" + input_names[i] + "' has " +
                                std::to_string(split.inputs[i].dim(0)) + " samples, y has " +
                                std::to_string(split.labels.dim(0)));
    }
  }
  return split;
}

}  // namespace tandem::train
