#pragma once
#include <string>
#include <vector>

#include "devices/cluster.h"
#include "ir/graph.h"
#include "ir/infer.h"

namespace tandem::testing {

// Hand-built clusters with round figures, so that expected times are easy to work out and the
// tests do not depend on the preset files.
inline Figure figure(double value, std::string source = "test figure") {
  Figure result;
  result.value = value;
  result.source = std::move(source);
  return result;
}

inline DeviceSpec device(const std::string& id, DeviceKind kind, const std::string& host) {
  DeviceSpec spec;
  spec.id = id;
  spec.kind = kind;
  spec.host = host;
  return spec;
}

inline size_t at(Precision precision) { return static_cast<size_t>(precision); }

inline DeviceSpec gpu(const std::string& id, const std::string& host) {
  DeviceSpec spec = device(id, DeviceKind::kGpu, host);
  spec.figures.matrix_flops[at(Precision::kBf16)] = figure(1000e12);
  spec.figures.matrix_flops[at(Precision::kFp16)] = figure(1000e12);
  spec.figures.matrix_flops[at(Precision::kTf32)] = figure(500e12);
  spec.figures.vector_flops[at(Precision::kFp32)] = figure(60e12);
  spec.figures.vector_flops[at(Precision::kFp64)] = figure(30e12);
  spec.figures.memory_bandwidth = figure(3e12);
  spec.figures.launch_overhead = figure(5e-6);
  spec.figures.matrix_tile = 8;  // in fp16/bf16 elements, as the GPU presets give it
  return spec;
}

// A TPU whose MXU edge is `tile`: 128 as on v5e, 256 as on v6e.
inline DeviceSpec tpu(const std::string& id, const std::string& host, int tile) {
  DeviceSpec spec = device(id, DeviceKind::kTpu, host);
  spec.figures.matrix_flops[at(Precision::kBf16)] = figure(200e12);
  spec.figures.matrix_flops[at(Precision::kInt8)] = figure(400e12);
  spec.figures.vector_flops[at(Precision::kFp32)] = figure(10e12);
  spec.figures.memory_bandwidth = figure(2e12);
  spec.figures.launch_overhead = figure(10e-6);
  spec.figures.matrix_tile = tile;
  return spec;
}

inline DeviceSpec cpu(const std::string& id, const std::string& host) {
  DeviceSpec spec = device(id, DeviceKind::kCpu, host);
  spec.figures.vector_flops[at(Precision::kFp32)] = figure(100e9);
  spec.figures.vector_flops[at(Precision::kFp64)] = figure(50e9);
  spec.figures.memory_bandwidth = figure(20e9);
  spec.figures.launch_overhead = figure(1e-6);
  return spec;
}

inline HostSpec host(const std::string& id) {
  HostSpec result;
  result.id = id;
  return result;
}

inline LinkSpec link(const std::string& from, const std::string& to, LinkKind kind, double forward,
                     double backward, double latency) {
  LinkSpec result;
  result.from = from;
  result.to = to;
  result.kind = kind;
  result.bandwidth_forward = figure(forward);
  result.bandwidth_backward = figure(backward);
  result.latency = figure(latency);
  return result;
}

// One host with a GPU, a v5e-like and a v6e-like TPU and a CPU, each on its own host link.
inline Cluster compute_cluster() {
  Cluster cluster;
  cluster.hosts = {host("h0")};
  cluster.devices = {gpu("gpu0", "h0"), tpu("v5e", "h0", 128), tpu("v6e", "h0", 256),
                     cpu("cpu0", "h0")};
  cluster.links = {link("gpu0", "h0", LinkKind::kPcie, 32e9, 32e9, 1e-6),
                   link("v5e", "h0", LinkKind::kPcie, 16e9, 16e9, 1e-6),
                   link("v6e", "h0", LinkKind::kPcie, 16e9, 16e9, 1e-6),
                   link("cpu0", "h0", LinkKind::kHostMemory, 20e9, 20e9, 0)};
  return cluster;
}

// Builds graphs node by node; `infer` types every value and costs every node.
class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 17) { graph_.opset = opset; }

  int input(const std::string& name, DType dtype, Shape shape) {
    const int id = graph_.add_value(name, {dtype, std::move(shape)});
    graph_.inputs.push_back(id);
    return id;
  }
  int constant(const std::string& name, DType dtype, Shape shape) {
    return constant(name, Tensor::zeros(dtype, std::move(shape)));
  }
  int constant(const std::string& name, Tensor value) {
    const int id = graph_.add_value(name, {value.dtype(), value.shape()});
    graph_.values[id].constant = std::move(value);
    return id;
  }
  int node(const std::string& op, std::vector<int> inputs,
           std::map<std::string, Attribute, std::less<>> attributes = {}) {
    Node node;
    node.name = op + std::to_string(graph_.nodes.size());
    node.op_type = op;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attributes);
    node.outputs = {graph_.add_value(node.name + "_out")};
    graph_.nodes.push_back(std::move(node));
    return graph_.nodes.back().outputs[0];
  }
  Graph infer(std::vector<int> outputs) {
    graph_.outputs = std::move(outputs);
    infer_graph(graph_);
    return graph_;
  }

 private:
  Graph graph_;
};

}  // namespace tandem::testing
