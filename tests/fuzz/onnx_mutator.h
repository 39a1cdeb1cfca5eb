#pragma once
// A structure-aware mutation for fuzz_onnx (libFuzzer builds only): most inputs are parsed as
// a ModelProto, one field anywhere in it is changed through protobuf's reflection, and the model
// is written back, so that mutations reach the schemas' checks (attribute values, dims, dtypes,
// names, op types, the number of inputs) instead of dying in the protobuf parser. The rest get
// libFuzzer's own byte mutations.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tandem::fuzz {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A field of one message of the model: an element of a repeated field, a singular field
// (element -1), or a repeated field as a whole, to add, remove, copy or swap elements (-2).
struct Slot {
  Message* message;
  const FieldDescriptor* field;
  int element;
};

inline void collect_slots(Message& message, std::vector<Slot>& slots,
                          std::vector<std::string>& names) {
  const Reflection* reflection = message.GetReflection();
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    const bool is_message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    const bool is_name = field->cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
                         field->name() != "raw_data" && field->name() != "doc_string";
    if (field->is_repeated()) {
      slots.push_back({&message, field, -2});
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        if (is_message) {
          collect_slots(*reflection->MutableRepeatedMessage(&message, field, i), slots, names);
        } else {
          slots.push_back({&message, field, i});
          if (is_name) names.push_back(reflection->GetRepeatedString(message, field, i));
        }
      }
    } else if (is_message) {
      if (reflection->HasField(message, field)) {
        collect_slots(*reflection->MutableMessage(&message, field), slots, names);
      }
    } else {
      slots.push_back({&message, field, -1});
      if (is_name && reflection->HasField(message, field))
        names.push_back(reflection->GetString(message, field));
    }
  }
}

inline int64_t mutated_integer(std::mt19937_64& rng, int64_t old) {
  static constexpr int64_t kInteresting[] = {
      0,         1,         -1,        2,         3,         4,         -2,
      7,         8,         16,        255,       256,       65536,     INT32_MAX,
      INT32_MIN, 1LL << 31, 1LL << 32, 1LL << 38, 1LL << 40, INT64_MAX, INT64_MIN};
  switch (rng() % 3) {
    case 0: return kInteresting[rng() % std::size(kInteresting)];
    case 1: return static_cast<int64_t>(static_cast<uint64_t>(old) + rng() % 5 - 2);  // wraps
    default: return static_cast<int64_t>(rng() % 64);
  }
}

inline double mutated_real(std::mt19937_64& rng, double old) {
  const double kInteresting[] = {
      0,       -0.0, 1,        -1,        0.5,
      1e-30,   1e30, INFINITY, -INFINITY, std::numeric_limits<double>::quiet_NaN(),
      2 * old, -old};
  return kInteresting[rng() % std::size(kInteresting)];
}

inline std::string mutated_text(std::mt19937_64& rng, const std::string& old,
                                const std::vector<std::string>& names) {
  switch (rng() % 4) {
    case 0: return names.empty() ? std::string() : names[rng() % names.size()];
    case 1: return std::string();
    case 2: return old.empty() ? old : old.substr(0, old.size() - 1 - rng() % old.size());
    default: return old + static_cast<char>(rng() % 256);
  }
}

// Changes one scalar of `slot` (element >= 0 or -1).
inline void mutate_scalar(std::mt19937_64& rng, const Slot& slot,
                          const std::vector<std::string>& names) {
  Message& m = *slot.message;
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* f = slot.field;
  const int i = slot.element;
  const bool repeated = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const int32_t old = repeated ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f);
      const auto value = static_cast<int32_t>(mutated_integer(rng, old));
      repeated ? r->SetRepeatedInt32(&m, f, i, value) : r->SetInt32(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const int64_t old = repeated ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f);
      const int64_t value = mutated_integer(rng, old);
      repeated ? r->SetRepeatedInt64(&m, f, i, value) : r->SetInt64(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      const uint32_t old = repeated ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
      const auto value = static_cast<uint32_t>(mutated_integer(rng, old));
      repeated ? r->SetRepeatedUInt32(&m, f, i, value) : r->SetUInt32(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t old = repeated ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f);
      const auto value = static_cast<uint64_t>(mutated_integer(rng, static_cast<int64_t>(old)));
      repeated ? r->SetRepeatedUInt64(&m, f, i, value) : r->SetUInt64(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const float old = repeated ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f);
      const auto value = static_cast<float>(mutated_real(rng, old));
      repeated ? r->SetRepeatedFloat(&m, f, i, value) : r->SetFloat(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double old = repeated ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
      const double value = mutated_real(rng, old);
      repeated ? r->SetRepeatedDouble(&m, f, i, value) : r->SetDouble(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      const bool value = !(repeated ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f));
      repeated ? r->SetRepeatedBool(&m, f, i, value) : r->SetBool(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      // A declared value mostly (the element types, attribute types), else any number.
      const google::protobuf::EnumDescriptor* type = f->enum_type();
      const int value = rng() % 4
                            ? type->value(static_cast<int>(rng() % type->value_count()))->number()
                            : static_cast<int>(mutated_integer(rng, 0));
      repeated ? r->SetRepeatedEnumValue(&m, f, i, value) : r->SetEnumValue(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::string old = repeated ? r->GetRepeatedString(m, f, i) : r->GetString(m, f);
      const std::string value = mutated_text(rng, old, names);
      repeated ? r->SetRepeatedString(&m, f, i, value) : r->SetString(&m, f, value);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
}

// Adds, removes, copies or swaps elements of a repeated field (nodes, inputs, dims, ints...).
inline void mutate_repeated(std::mt19937_64& rng, const Slot& slot) {
  Message& m = *slot.message;
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* f = slot.field;
  const int count = r->FieldSize(m, f);
  const unsigned choice = count == 0 ? 0 : rng() % 4;
  if (choice == 0 || choice == 1) {  // a new element: empty, or a copy of one
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Message* added = r->AddMessage(&m, f);
      if (choice == 1)
        added->CopyFrom(r->GetRepeatedMessage(m, f, static_cast<int>(rng() % count)));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      r->AddInt64(&m, f, mutated_integer(rng, 0));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
      r->AddInt32(&m, f, static_cast<int32_t>(mutated_integer(rng, 0)));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
      r->AddFloat(&m, f, static_cast<float>(mutated_real(rng, 1)));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      r->AddString(&m, f, count ? r->GetRepeatedString(m, f, static_cast<int>(rng() % count)) : "");
    }
  } else if (choice == 2) {  // remove one
    r->SwapElements(&m, f, static_cast<int>(rng() % count), count - 1);
    r->RemoveLast(&m, f);
  } else {  // swap two: nodes out of order, inputs exchanged
    r->SwapElements(&m, f, static_cast<int>(rng() % count), static_cast<int>(rng() % count));
  }
}

// libFuzzer's custom mutator: one structural change to a model that parses, else bytes.
inline size_t mutate_model(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (rng() % 5 == 0 || !model.ParseFromArray(data, static_cast<int>(size))) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::vector<Slot> slots;
  std::vector<std::string> names;
  collect_slots(model, slots, names);
  if (slots.empty()) return LLVMFuzzerMutate(data, size, max_size);
  const Slot& slot = slots[rng() % slots.size()];
  if (slot.element == -2) {
    mutate_repeated(rng, slot);
  } else {
    mutate_scalar(rng, slot, names);
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace tandem::fuzz
