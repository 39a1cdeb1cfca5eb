// The cluster-file reader on arbitrary bytes: YAML syntax, keys, ids, presets, figures with
// units, counts, links and the paths between devices; then the cost model every verb builds
// from an accepted cluster. The file's folder holds profile.json (a calibration profile from
// `tandem calibrate --quick`), which devices may name.
#include <filesystem>

#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::filesystem::copy_file(TANDEM_SOURCE_DIR "/tests/fuzz/data/profile.json",
                             tandem::fuzz::scratch_dir() / "profile.json",
                             std::filesystem::copy_options::overwrite_existing);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::write_scratch("cluster.yaml", data, size);
  return tandem::fuzz::expect_clean([&] {
    const tandem::Cluster cluster = tandem::load_cluster(path);
    const tandem::CostModel cost(cluster);
  });
}
