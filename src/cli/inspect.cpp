#include <cstdio>

#include "cli/commands.h"
#include "cost/graph_costs.h"
#include "devices/cluster.h"
#include "report/device_costs.h"
#include "report/model_summary.h"

namespace tandem::cli {

int inspect_command(const InspectOptions& options) {
  const ImportedModel model = load_model(options);
  const ModelSummary summary = summarize(model.graph, model.path, model.producer);
  if (options.cluster.empty()) {
    if (options.json) {
      std::printf("%s\n", summary_json(summary).dump(2).c_str());
    } else {
      std::printf("%s", render_summary(summary).c_str());
    }
    return kExitOk;
  }
  const Cluster cluster = load_cluster(options.cluster);
  const CostModel cost_model(cluster);
  const GraphDeviceCosts costs = graph_device_costs(model.graph, cost_model);
  if (options.json) {
    nlohmann::json json = summary_json(summary);
    json["cluster"] = options.cluster;
    json["predicted"] = device_costs_json(costs);
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::printf("%s\n%s", render_summary(summary).c_str(), render_device_costs(costs).c_str());
  }
  return kExitOk;
}

}  // namespace tandem::cli
