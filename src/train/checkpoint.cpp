#include "train/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "onnx/export.h"
#include "util/npy.h"

namespace tandem::train {
namespace fs = std::filesystem;
namespace {

void rename_into_place(const fs::path& partial, const fs::path& destination) {
  std::error_code error;
  fs::rename(partial, destination, error);
  if (error) throw InputError(destination.string(), "cannot write: " + error.message());
}

}  // namespace

void write_checkpoint(const std::string& dir, const std::string& source_model,
                      const Trainer& trainer, const std::map<std::string, std::string>& settings) {
  const fs::path root(dir);
  std::error_code error;
  fs::create_directories(root / "state", error);
  if (error) throw InputError(dir, "cannot create the checkpoint folder: " + error.message());
  nlohmann::json files = nlohmann::json::object();
  int index = 0;
  for (const auto& [name, value] : trainer.values()) {
    const std::string file = "state/" + std::to_string(index++) + ".npy";
    const fs::path partial = root / (file + ".partial");
    write_npy(partial.string(), value.to_host());
    rename_into_place(partial, root / file);
    files[name] = file;
  }
  write_with_initializers(source_model, (root / "model.onnx").string(), trainer.initializers());
  const nlohmann::json manifest = {
      {"format", 1}, {"steps", trainer.steps_taken()}, {"settings", settings}, {"values", files}};
  const fs::path partial = root / "checkpoint.json.partial";
  {
    std::ofstream out(partial);
    out << manifest.dump(2) << "\n";
    if (!out.flush()) throw InputError((root / "checkpoint.json").string(), "cannot write");
  }
  rename_into_place(partial, root / "checkpoint.json");
}

Checkpoint read_checkpoint(const std::string& dir) {
  const fs::path path = fs::path(dir) / "checkpoint.json";
  std::ifstream in(path);
  if (!in)
    throw InputError(path.string(), "no checkpoint here (tandem train --checkpoint writes one)");
  Checkpoint checkpoint;
  try {
    const nlohmann::json manifest = nlohmann::json::parse(in);
    if (manifest.at("format").get<int>() != 1)
      throw InputError(path.string(), "unknown checkpoint format");
    checkpoint.steps = manifest.at("steps").get<int64_t>();
    if (checkpoint.steps < 0) throw InputError(path.string(), "negative steps");
    if (manifest.contains("settings"))
      checkpoint.settings = manifest.at("settings").get<std::map<std::string, std::string>>();
    for (const auto& [name, file] : manifest.at("values").items()) {
      const std::string relative = file.get<std::string>();
      if (relative.find("..") != std::string::npos || fs::path(relative).is_absolute())
        throw InputError(path.string(), "names a file outside the checkpoint: " + relative);
      checkpoint.values[name] = read_npy((fs::path(dir) / relative).string());
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string(), std::string("not a checkpoint: ") + e.what());
  }
  return checkpoint;
}

}  // namespace tandem::train
