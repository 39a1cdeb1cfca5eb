#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/batch_split.h"
#include "ir/shape.h"
#include "plan/plan.h"
#include "plan/problem.h"

namespace tandem {

// A file a plan was made from, as the plan records it.
struct PlanSource {
  std::string path;           // as given on the command line
  std::string absolute_path;  // where that was when the plan was made
  std::string sha256;         // of the file's bytes then
  // The file to read now: the absolute path while it exists (the plan may be used from another
  // folder), else the path as given.
  std::string resolved() const;
};
// Records a file as it is now (hashing its bytes); InputError naming it when it cannot be read.
PlanSource plan_source(const std::string& path);

// What a plan was made from: with it, `tandem simulate plan.json` and `tandem run --plan
// plan.json` rebuild the same planning problem without being told the model, cluster or dims.
struct PlanProvenance {
  PlanSource model, cluster;
  std::map<std::string, int64_t> dims;  // --dim NAME=N
  std::map<std::string, Shape> shapes;  // --shape NAME=AxB and the --input files' shapes
  bool fused = true;                    // planned for the graph fused for inference
  // Planned on the cluster's whole-machine view (whole_machine_view, devices/cluster.h): each
  // host's CPU devices as one device.
  bool whole_machine = false;
  // The bindings as the command line takes them: "batch=8" for --dim, "x=8x3x224x224" for
  // --shape.
  std::vector<std::string> dim_arguments() const;
  std::vector<std::string> shape_arguments() const;
};

// The plan file (docs/PLAN_FORMAT.md): versioned JSON naming nodes, values, devices and links by
// their names in the model and the cluster, so that a plan can be checked against both, with
// what it was made from.
nlohmann::json plan_json(const Plan& plan, const PlanningProblem& problem,
                         const PlanProvenance& provenance);
void write_plan(const std::string& path, const Plan& plan, const PlanningProblem& problem,
                const PlanProvenance& provenance);

// A plan file's record of what it was made from; throws InputError naming the file and the
// field when the document is not a plan of this version or the record is malformed.
PlanProvenance plan_provenance(const nlohmann::json& document, const std::string& file);
// Throws InputError(file, "the model zoo/x.onnx changed since the plan was made (...)") when
// the file's bytes differ from the recorded hash; `what` is "model" or "cluster".
void check_unchanged(const PlanSource& source, const std::string& what, const std::string& file);
// Both the model and the cluster.
void check_provenance(const PlanProvenance& provenance, const std::string& file);

// The cluster a plan was made on: the file's, or its whole-machine view where the plan was made
// on that (InputError naming `plan_file` when the cluster has no such view any more).
Cluster cluster_as_planned(const std::string& cluster_file, const PlanProvenance& provenance,
                           const std::string& plan_file);

// Reads a plan for this problem's graph and cluster; throws InputError naming the file and the
// field when the file is not a plan of this version, or does not match the model or cluster.
Plan plan_from_json(const nlohmann::json& json, const PlanningProblem& problem,
                    const std::string& file);
Plan read_plan(const std::string& path, const PlanningProblem& problem);
// The planning options a plan file was made with: its objective and micro-batches, the batch as
// `split` finds it (InputError naming the file when the plan's batch differs, or a field has
// the wrong type).
PlanOptions plan_options_of(const nlohmann::json& plan, const BatchSplit& split,
                            const std::string& file);
// A plan file's JSON document; InputError naming the file when it is missing or not JSON.
nlohmann::json read_plan_document(const std::string& path);

}  // namespace tandem
