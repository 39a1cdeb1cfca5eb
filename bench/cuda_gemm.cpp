// GEMM throughput of the CUDA backend's MatMul kernel (cuBLASLt through Tandem's kernel, as a
// model's MatMul runs): an n x n x n product in one dtype, timed as the median of `runs`
// products after warm-ups, each to the end of the GPU's work. Prints one JSON line.
//   cuda_gemm [--dtype bf16|fp16|fp32] [--n 8192] [--runs 10]
// TF32: TANDEM_CUDA_TF32=1 cuda_gemm --dtype fp32 (the switch is read once per process).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "ir/infer.h"
#include "runtime/executor.h"
#include "util/random_tensor.h"

using namespace tandem;

int main(int argc, char** argv) {
  std::string dtype_name = "bf16";
  int64_t n = 8192;
  int runs = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dtype"))
      dtype_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--n"))
      n = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs"))
      runs = std::atoi(argv[i + 1]);
  }
  const DType dtype = dtype_name == "bf16"   ? DType::kBFloat16
                      : dtype_name == "fp16" ? DType::kFloat16
                                             : DType::kFloat32;
  if (const std::string absent = cuda::gpu_absence(); !absent.empty()) {
    std::fprintf(stderr, "cuda_gemm: %s\n", absent.c_str());
    return 77;
  }
  Graph graph;
  graph.opset = 17;
  const int a = graph.add_value("a", {dtype, {n, n}});
  const int b = graph.add_value("b", {dtype, {n, n}});
  graph.inputs = {a, b};
  Node matmul;
  matmul.name = "gemm";
  matmul.op_type = "MatMul";
  matmul.inputs = {a, b};
  matmul.outputs = {graph.add_value("c")};
  graph.nodes.push_back(matmul);
  graph.outputs = matmul.outputs;
  infer_graph(graph);

  cuda::CudaDevice gpu("gpu0", 0);
  GraphExecutor executor(graph, gpu);
  std::mt19937_64 rng(1);
  // Random data: a product of zeros runs faster than real work.
  std::vector<Tensor> inputs;
  for (int i = 0; i < 2; ++i) {
    Tensor values = random_tensor(dtype, {n, n}, rng);
    inputs.push_back(gpu.receive(values));
  }
  const auto once = [&] {
    const auto start = std::chrono::steady_clock::now();
    executor.run(inputs);
    gpu.record()->synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (int i = 0; i < 3; ++i) once();
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) seconds.push_back(once());
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const char* tf32 = std::getenv("TANDEM_CUDA_TF32");
  const std::string precision =
      dtype == DType::kFloat32 ? (tf32 && std::string(tf32) == "1" ? "tf32" : "fp32") : dtype_name;
  std::printf(
      "{\"precision\": \"%s\", \"n\": %lld, \"median_seconds\": %.6g, \"tflops\": %.4g, "
      "\"device\": \"%s\"}\n",
      precision.c_str(), static_cast<long long>(n), median, flops / median / 1e12,
      gpu.properties().name);
  return 0;
}
