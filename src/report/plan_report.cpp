#include "report/plan_report.h"

#include "plan/plan_json.h"
#include "report/json_schema.h"
#include "report/table.h"

namespace tandem {
namespace {

std::string figure_for(Objective objective, double value) {
  switch (objective) {
    case Objective::kLatency: return seconds_text(value);
    case Objective::kThroughput: return si(value) + " samples/s";
    case Objective::kCost: return value > 0 ? format("$%.3g per M samples", value) : "no prices";
  }
  return "";
}

std::string percent(double fraction) { return format("%.0f%%", 100 * fraction); }

double objective_value(const Plan& plan) {
  switch (plan.objective) {
    case Objective::kLatency: return plan.predicted.latency_seconds;
    case Objective::kThroughput: return plan.predicted.throughput_samples_per_second;
    case Objective::kCost: return plan.predicted.cost_per_million_samples;
  }
  return 0;
}

std::string devices_table(const Plan& plan, const PlanningProblem& problem) {
  const int devices = problem.device_count();
  std::vector<int> ops(devices, 0);
  std::vector<double> flops(devices, 0);
  double total_flops = 0;
  for (int n = 0; n < problem.node_count(); ++n) {
    const double node_flops = problem.graph() ? problem.graph()->nodes[n].cost.flops : 0;
    if (!plan.batch_share.empty()) {
      for (int d = 0; d < devices; ++d) {
        if (plan.batch_share[d] > 0) ++ops[d], flops[d] += node_flops * plan.batch_share[d];
      }
    } else {
      ++ops[plan.device_of_node[n]];
      flops[plan.device_of_node[n]] += node_flops;
    }
    total_flops += node_flops;
  }
  Table table({"device", "ops", "FLOPs", "busy", "memory", "capacity", "figures"});
  for (int d = 0; d < devices; ++d) {
    const DeviceSpec& device = problem.cluster().devices[d];
    const double capacity = problem.memory_capacity(d);
    table.add_row({device.id + (problem.allowed(d) ? "" : " (excluded)"), std::to_string(ops[d]),
                   total_flops > 0 ? percent(flops[d] / total_flops) : "-",
                   seconds_text(plan.predicted.busy_seconds[d]),
                   human_bytes(plan.predicted.memory_bytes[d]),
                   capacity == kInfinity ? "unknown" : human_bytes(capacity),
                   d < static_cast<int>(plan.figure_sources.size()) ? plan.figure_sources[d] : ""});
  }
  return table.render();
}

std::string links_table(const Plan& plan, const PlanningProblem& problem) {
  Table table({"link", "kind", "bytes per batch"});
  bool any = false;
  for (size_t l = 0; l < plan.predicted.link_bytes.size(); ++l) {
    if (plan.predicted.link_bytes[l] <= 0) continue;
    const LinkSpec& link = problem.cluster().links[l];
    table.add_row({link.from + " - " + link.to, std::string(link_kind_name(link.kind)),
                   human_bytes(plan.predicted.link_bytes[l])});
    any = true;
  }
  return any ? table.render() : "no transfers between devices\n";
}

std::string strategies_table(const PlanReport& report) {
  Table table({"strategy", "predicted", "bound", "efficiency", "vs best single", "plan"});
  for (const StrategyResult& result : report.strategies) {
    if (!result.plan) {
      table.add_row({result.strategy, "-", "-", "-", "-", "none: " + result.why_not});
      continue;
    }
    const Plan& plan = *result.plan;
    table.add_row(
        {result.strategy, objective_figure(plan), figure_for(plan.objective, plan.lower_bound),
         percent(plan.efficiency),
         plan.speedup_over_best_single > 0 ? format("%.2fx", plan.speedup_over_best_single) : "-",
         format("%zu segments, %zu transfers", plan.segments.size(), plan.transfers.size())});
  }
  return table.render();
}

}  // namespace

std::string objective_figure(const Plan& plan) {
  return figure_for(plan.objective, objective_value(plan));
}

std::string render_plan_report(const PlanReport& report, const PlanningProblem& problem) {
  const Plan& plan = report.plan;
  const Prediction& predicted = plan.predicted;
  std::string text = format("plan: %s on %s, strategy %s, objective %s, batch %lld",
                            report.model.c_str(), report.cluster.c_str(), plan.strategy.c_str(),
                            std::string(objective_name(plan.objective)).c_str(),
                            static_cast<long long>(problem.options().batch));
  if (!plan.stages.empty()) text += format(", %d micro-batches", plan.microbatches);
  text += "\n";
  if (!plan.reason.empty())
    text += format("%s chose %s: %s\n", plan.strategy.c_str(), plan.chosen.c_str(),
                   plan.reason.c_str());
  text += "\n" + devices_table(plan, problem) + "\n" + links_table(plan, problem) + "\n";
  text += format("predicted latency     %s per batch\n",
                 seconds_text(predicted.latency_seconds).c_str());
  text += format("predicted throughput  %s samples/s\n",
                 si(predicted.throughput_samples_per_second).c_str());
  text += format("predicted cost        %s\n",
                 figure_for(Objective::kCost, predicted.cost_per_million_samples).c_str());
  text +=
      format("lower bound           %s (%s): efficiency %s\n",
             figure_for(plan.objective, plan.lower_bound).c_str(),
             std::string(objective_name(plan.objective)).c_str(), percent(plan.efficiency).c_str());
  const int best = problem.best_single_device();
  text += best >= 0
              ? format("speed-up over the best single device (%s): %.2fx\n",
                       problem.cluster().devices[best].id.c_str(), plan.speedup_over_best_single)
              : std::string("no single device runs and holds the whole model\n");
  text += format("%zu segments, %zu transfers\n\n", plan.segments.size(), plan.transfers.size());
  text += "strategies side by side:\n" + strategies_table(report);
  return text;
}

nlohmann::json plan_report_json(const PlanReport& report, const PlanningProblem& problem) {
  nlohmann::json json = plan_json(report.plan, problem, report.provenance);
  json["schema_version"] = kJsonSchemaVersion;
  json["best_single_device"] =
      problem.best_single_device() >= 0
          ? nlohmann::json(problem.cluster().devices[problem.best_single_device()].id)
          : nlohmann::json(nullptr);
  nlohmann::json strategies = nlohmann::json::array();
  for (const StrategyResult& result : report.strategies) {
    nlohmann::json row = {{"strategy", result.strategy},
                          {"feasible", result.plan.has_value()},
                          {"planning_s", result.planning_seconds}};
    if (result.plan) {
      const Prediction& predicted = result.plan->predicted;
      row["latency_s"] = predicted.latency_seconds;
      row["throughput_samples_per_s"] = predicted.throughput_samples_per_second;
      row["cost_per_million_samples_usd"] = predicted.cost_per_million_samples;
      row["efficiency"] = result.plan->efficiency;
      row["speedup_over_best_single"] = result.plan->speedup_over_best_single;
    } else {
      row["why_not"] = result.why_not;
    }
    strategies.push_back(row);
  }
  json["strategies"] = strategies;
  return json;
}

}  // namespace tandem
