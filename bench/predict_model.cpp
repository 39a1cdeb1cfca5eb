// Predicted time of one model on the local CPU, as the cost model sees it, for
// predict_vs_measure.py: the graph `tandem run` runs (constants folded and fused, unless
// --no-fusion), every
// top-level op costed on a local cluster built from a calibration profile, or on one device of a
// cluster file (a PJRT device is priced as the program its plugin compiles). Prints JSON.
//
// Usage: predict_model MODEL [--dim NAME=N]... [--profile FILE | --cluster FILE --device ID]
//        [--no-fusion]
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_model.h"
#include "devices/cluster.h"
#include "ir/error.h"
#include "ir/shape.h"
#include "onnx/importer.h"
#include "runtime/constant_folding.h"

namespace {

using namespace tandem;

struct Arguments {
  std::string model;
  std::string profile;
  std::string cluster;
  std::string device;
  bool fuse = true;
  ImportOptions import;
};

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool has_value = i + 1 < argc;
    if (argument == "--dim" && has_value) {
      const std::string dim = argv[++i];
      const size_t equals = dim.find('=');
      if (equals == std::string::npos) throw InputError("--dim " + dim, "expected NAME=N");
      arguments.import.dims[dim.substr(0, equals)] = std::stoll(dim.substr(equals + 1));
    } else if (argument == "--profile" && has_value) {
      arguments.profile = argv[++i];
    } else if (argument == "--cluster" && has_value) {
      arguments.cluster = argv[++i];
    } else if (argument == "--device" && has_value) {
      arguments.device = argv[++i];
    } else if (argument == "--no-fusion") {
      arguments.fuse = false;
    } else if (arguments.model.empty() && argument.rfind("--", 0) != 0) {
      arguments.model = argument;
    } else {
      throw InputError(argument,
                       "unknown argument (usage: predict_model MODEL [--dim NAME=N]... "
                       "[--profile FILE | --cluster FILE --device ID] [--no-fusion])");
    }
  }
  if (arguments.model.empty()) throw InputError("predict_model", "no model given");
  if (arguments.cluster.empty() != arguments.device.empty())
    throw InputError("predict_model", "--cluster and --device go together");
  if (!arguments.cluster.empty() && !arguments.profile.empty())
    throw InputError("predict_model", "--profile or --cluster, not both");
  return arguments;
}

nlohmann::json predict(const Arguments& arguments) {
  ImportedModel model = import_onnx(arguments.model, arguments.import);
  // As `tandem run` prepares it: shapes computed from constants (a detector's resize) are only
  // known once folded, and an unknown dim counts as 1 in the FLOPs.
  if (arguments.fuse) prepare_for_inference(model.graph);
  const Cluster cluster = arguments.cluster.empty() ? local_cluster(arguments.profile)
                                                    : load_cluster(arguments.cluster);
  int device = 0;
  if (!arguments.device.empty()) {
    device = -1;
    for (size_t i = 0; i < cluster.devices.size(); ++i) {
      if (cluster.devices[i].id == arguments.device) device = static_cast<int>(i);
    }
    if (device < 0) throw InputError(arguments.cluster, "no device " + arguments.device);
  }
  const CostModel costs(cluster);
  const Graph& graph = model.graph;

  struct TypeTotal {
    double seconds = 0;
    int count = 0;
  };
  std::map<std::string, TypeTotal> by_type;
  std::map<std::string, int> by_source;
  std::map<std::string, int> by_bound;
  double total = 0;
  nlohmann::json per_node = nlohmann::json::array();
  for (const Node& node : graph.nodes) {
    const OpTime time = costs.op_time(node, graph, device);
    total += time.seconds;
    const ActivationLayout layout = costs.activation_layout(node, graph, device);
    per_node.push_back(
        {{"node", node.name},
         {"layout", depthwise_layout_key(layout.input_channels_last, layout.output_channels_last)},
         {"op_type", node.op_type},
         {"output_shape", node.outputs.empty() || node.outputs[0] < 0
                              ? std::string()
                              : shape_str(graph.values[node.outputs[0]].type.shape)},
         {"seconds", time.seconds},
         {"compute_seconds", time.compute_seconds},
         {"memory_seconds", time.memory_seconds},
         {"flops", node.cost.flops},
         {"bytes", node.cost.bytes},
         {"bound", bound_name(time.bound)},
         {"source", time.source}});
    by_type[node.op_type].seconds += time.seconds;
    ++by_type[node.op_type].count;
    ++by_source[time.source];
    ++by_bound[std::string(bound_name(time.bound))];
  }
  nlohmann::json op_types = nlohmann::json::object();
  for (const auto& [type, row] : by_type) {
    op_types[type] = {{"seconds", row.seconds}, {"count", row.count}};
  }
  return {{"model", model.path},
          {"profile", arguments.profile},
          {"device", cluster.devices[device].id},
          {"nodes", graph.nodes.size()},
          {"total_seconds", total},
          {"op_types", op_types},
          {"sources", by_source},
          {"bounds", by_bound},
          {"per_node", per_node}};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::printf("%s\n", predict(parse(argc, argv)).dump(2).c_str());
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "predict_model: error: %s: %s\n", e.subject().c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predict_model: internal error: %s\n", e.what());
    return 3;
  }
}
