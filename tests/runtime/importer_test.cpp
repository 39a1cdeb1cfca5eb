#include "onnx/importer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace tandem {
namespace {

std::string zoo(const std::string& model) {
  const char* dir = std::getenv("TANDEM_ZOO");
  return std::string(dir ? dir : TANDEM_DEFAULT_ZOO) + "/" + model + "/model.onnx";
}

const Value& value_named(const Graph& graph, const std::string& name) {
  const int id = graph.find_value(name);
  EXPECT_GE(id, 0) << name;
  return graph.values[id];
}

TEST(Importer, BindsSymbolicDimsAndCountsMatMulFlops) {
  ImportOptions options;
  options.dims["batch"] = 8;
  const ImportedModel model = import_onnx(zoo("mlp"), options);
  EXPECT_EQ(model.graph.opset, 13);
  EXPECT_EQ(value_named(model.graph, "x").type.shape, (Shape{8, 256}));
  EXPECT_TRUE(model.unbound_dims.empty());
  double matmul_flops = 0;
  for (const Node& node : model.graph.nodes) {
    if (node.op_type != "MatMul" && node.op_type != "Gemm") continue;
    const Shape& a = model.graph.values[node.inputs[0]].type.shape;
    const Shape& out = model.graph.values[node.outputs[0]].type.shape;
    EXPECT_DOUBLE_EQ(node.cost.flops, 2.0 * a[0] * a[1] * out[1]) << node.label();
    matmul_flops += node.cost.flops;
    EXPECT_GT(node.cost.bytes, 0);
  }
  EXPECT_GT(matmul_flops, 0);
}

TEST(Importer, UnboundDimsDefaultToOneAndAreReported) {
  const ImportedModel model = import_onnx(zoo("mlp"));
  EXPECT_EQ(value_named(model.graph, "x").type.shape, (Shape{1, 256}));
  EXPECT_EQ(model.unbound_dims, std::vector<std::string>{"batch"});
}

TEST(Importer, ShapeOptionOverridesAnInput) {
  ImportOptions options;
  options.shapes["x"] = Shape{3, 256};
  EXPECT_EQ(value_named(import_onnx(zoo("mlp"), options).graph, "x").type.shape, (Shape{3, 256}));
  options.shapes["x"] = Shape{3, 256, 1};
  EXPECT_THROW(import_onnx(zoo("mlp"), options), InputError);
}

TEST(Importer, FoldsShapeArithmeticIntoStaticShapes) {
  // The GPT model computes its mask and reshapes from Shape/Range/ConstantOfShape chains.
  ImportOptions options;
  options.dims["batch"] = 2;
  const ImportedModel model = import_onnx(zoo("gpt"), options);
  for (const Node& node : model.graph.nodes) {
    EXPECT_NE(node.op_type, "Shape") << "Shape should have been folded";
    for (int out : node.outputs) {
      EXPECT_TRUE(is_static(model.graph.values[out].type.shape)) << node.label();
    }
  }
}

TEST(Importer, LoadsExternalDataInsideTheModelFolder) {
  ImportOptions options;
  options.dims["batch"] = 2;
  const ImportedModel model = import_onnx(zoo("dlrm"), options);
  int64_t largest = 0;
  for (const Value& value : model.graph.values) {
    if (value.is_constant()) largest = std::max(largest, value.constant.dim(0));
  }
  EXPECT_GE(largest, 100000);  // the embedding tables came from dlrm.weights
}

TEST(Importer, KeepsDataDependentShapesDynamic) {
  const ImportedModel model = import_onnx(zoo("postproc"));
  const Graph& graph = model.graph;
  bool dynamic_output = false;
  for (int id : graph.outputs) dynamic_output |= !is_static(graph.values[id].type.shape);
  EXPECT_TRUE(dynamic_output);
}

TEST(Importer, MissingFileNamesIt) {
  try {
    import_onnx("/nonexistent/model.onnx");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.subject(), "/nonexistent/model.onnx");
    EXPECT_STREQ(e.what(), "no such file");
  }
}

// torch 2's exporter writes MultiheadAttention's reshape target as a Concat of Slices of the
// input's Shape whose ends come from a Mod of two constants: the Mod must fold for the target's
// length, and so the output's rank, to be known.
TEST(Importer, FoldsAModOfConstantsIntoAReshapeTarget) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name("mha_reshape");
  const auto add_tensor_value = [](onnx::ValueInfoProto* info, const std::string& name,
                                   std::vector<std::string> dims) {
    info->set_name(name);
    auto* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::string& dim : dims) {
      auto* d = type->mutable_shape()->add_dim();
      if (std::isdigit(static_cast<unsigned char>(dim[0])))
        d->set_dim_value(std::stoll(dim));
      else
        d->set_dim_param(dim);
    }
  };
  add_tensor_value(graph.add_input(), "x", {"batch", "6"});
  add_tensor_value(graph.add_output(), "y", {});
  const auto constant = [&](const std::string& name, int64_t value) {
    onnx::TensorProto* tensor = graph.add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT64);
    tensor->add_dims(1);
    tensor->add_int64_data(value);
  };
  for (const auto& [name, value] :
       {std::pair{"zero", 0}, std::pair{"one", 1}, std::pair{"two", 2}, std::pair{"three", 3}})
    constant(name, value);
  const auto node = [&](const std::string& op, std::vector<std::string> inputs,
                        const std::string& output) {
    onnx::NodeProto* n = graph.add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (const std::string& input : inputs) n->add_input(input);
    n->add_output(output);
    return n;
  };
  node("Shape", {"x"}, "shape");
  node("Mod", {"one", "three"}, "mod");  // 1
  node("Reshape", {"mod", "one"}, "end");
  node("Slice", {"shape", "zero", "end"}, "leading");  // [batch]
  onnx::NodeProto* concat = node("Concat", {"leading", "two", "three"}, "target");
  onnx::AttributeProto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node("Reshape", {"x", "target"}, "y");
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_mha_reshape.onnx").string();
  {
    std::ofstream file(path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&file));
  }
  ImportOptions options;
  options.dims["batch"] = 4;
  const ImportedModel model = import_onnx(path, options);
  EXPECT_EQ(value_named(model.graph, "y").type.shape, (Shape{4, 2, 3}));
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// The same graph stamped with every supported opset imports; 12 and 22 are refused by name.
TEST(Importer, AcceptsEveryOpsetFrom13To21) {
  onnx::ModelProto proto;
  {
    std::ifstream file(zoo("mlp"), std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&file));
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / "tandem_opset_sweep.onnx").string();
  for (int opset = 12; opset <= 22; ++opset) {
    for (onnx::OperatorSetIdProto& entry : *proto.mutable_opset_import()) {
      if (entry.domain().empty()) entry.set_version(opset);
    }
    {
      std::ofstream file(path, std::ios::binary);
      ASSERT_TRUE(proto.SerializeToOstream(&file));
    }
    if (opset >= kMinOpset && opset <= kMaxOpset) {
      EXPECT_EQ(import_onnx(path).graph.opset, opset);
    } else {
      try {
        import_onnx(path);
        ADD_FAILURE() << "opset " << opset << " was accepted";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("opset " + std::to_string(opset)), std::string::npos)
            << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace tandem
