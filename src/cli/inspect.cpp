#include <cstdio>

#include "cli/commands.h"
#include "report/model_summary.h"

namespace tandem::cli {

int inspect_command(const InspectOptions& options) {
  const ImportedModel model = load_model(options);
  const ModelSummary summary = summarize(model.graph, model.path, model.producer);
  if (options.json) {
    std::printf("%s\n", summary_json(summary).dump(2).c_str());
  } else {
    std::printf("%s", render_summary(summary).c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
