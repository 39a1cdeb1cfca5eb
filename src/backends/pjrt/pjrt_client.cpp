#include "backends/pjrt/pjrt_client.h"

#include <chrono>
#include <thread>

#include "ir/error.h"

namespace tandem::pjrt {

// Every PJRT argument struct starts zeroed with its own size, so fields added after this
// build's header read as absent.
#define PJRT_ARGS(type, name) \
  type name{};                \
  name.struct_size = type##_STRUCT_SIZE

namespace {

// Handles destroy in destructors, which must not throw: a failed destroy is dropped.
void discard(const PJRT_Api* api, PJRT_Error* error) {
  if (error == nullptr) return;
  PJRT_ARGS(PJRT_Error_Destroy_Args, args);
  args.error = error;
  api->PJRT_Error_Destroy(&args);
}

}  // namespace

void destroy_handle(const PJRT_Api* api, PJRT_Client* client) {
  PJRT_ARGS(PJRT_Client_Destroy_Args, args);
  args.client = client;
  discard(api, api->PJRT_Client_Destroy(&args));
}

void destroy_handle(const PJRT_Api* api, PJRT_LoadedExecutable* executable) {
  PJRT_ARGS(PJRT_LoadedExecutable_Destroy_Args, args);
  args.executable = executable;
  discard(api, api->PJRT_LoadedExecutable_Destroy(&args));
}

void destroy_handle(const PJRT_Api* api, PJRT_Buffer* buffer) {
  PJRT_ARGS(PJRT_Buffer_Destroy_Args, args);
  args.buffer = buffer;
  discard(api, api->PJRT_Buffer_Destroy(&args));
}

namespace {

// Whether `event` is done; an event that cannot say is treated as not done (Await then waits).
bool event_ready(const PJRT_Api* api, PJRT_Event* event) {
  PJRT_ARGS(PJRT_Event_IsReady_Args, args);
  args.event = event;
  PJRT_Error* error = api->PJRT_Event_IsReady(&args);
  if (error != nullptr) {
    discard(api, error);
    return false;
  }
  return args.is_ready;
}

// How long a waiting thread watches an event awake before it sleeps in Await.
constexpr auto kWatchAwake = std::chrono::microseconds(200);

// Waits for `event` and destroys it; throws if it or the work it marks failed. A thread asleep
// in Await took 30-90 us to wake on a 2-vCPU VM (an idle vCPU woken by the hypervisor): where
// the work is short (`watch`), the caller watches the event awake first, yielding its core to
// any thread that wants it, as the plan executor's threads do. A plan of one 4x16 Add on the
// CPU plugin took 85-95 us end to end asleep, 10 us watching.
void await_event(const PJRT_Api* api, PJRT_Event* event, std::string_view what, bool watch = true) {
  if (event == nullptr) return;
  const auto until = std::chrono::steady_clock::now() + kWatchAwake;
  while (watch && !event_ready(api, event) && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  PJRT_ARGS(PJRT_Event_Await_Args, await);
  await.event = event;
  PJRT_Error* error = api->PJRT_Event_Await(&await);
  PJRT_ARGS(PJRT_Event_Destroy_Args, destroy);
  destroy.event = event;
  PJRT_Error* destroy_error = api->PJRT_Event_Destroy(&destroy);
  check(api, error, what);
  check(api, destroy_error, "PJRT_Event_Destroy");
}

std::span<PJRT_Device* const> addressable_devices(const PJRT_Api* api, PJRT_Client* client) {
  PJRT_ARGS(PJRT_Client_AddressableDevices_Args, args);
  args.client = client;
  check(api, api->PJRT_Client_AddressableDevices(&args), "PJRT_Client_AddressableDevices");
  return {args.addressable_devices, args.num_addressable_devices};
}

}  // namespace

std::vector<int64_t> PjrtBuffer::dims() const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Buffer_Dimensions_Args, args);
  args.buffer = buffer_.get();
  check(api, api->PJRT_Buffer_Dimensions(&args), "PJRT_Buffer_Dimensions");
  return {args.dims, args.dims + args.num_dims};
}

void PjrtBuffer::to_host(void* dst, size_t bytes) const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Buffer_ToHostBuffer_Args, args);
  args.src = buffer_.get();
  args.dst = dst;
  args.dst_size = bytes;
  check(api, api->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  await_event(api, args.event, "PJRT_Buffer_ToHostBuffer");
}

PjrtBuffer PjrtBuffer::copy_to_device(PJRT_Device* device) const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Buffer_CopyToDevice_Args, args);
  args.buffer = buffer_.get();
  args.dst_device = device;
  check(api, api->PJRT_Buffer_CopyToDevice(&args), "PJRT_Buffer_CopyToDevice");
  PjrtBuffer copy(plugin_, args.dst_buffer);
  PJRT_ARGS(PJRT_Buffer_ReadyEvent_Args, ready);
  ready.buffer = args.dst_buffer;
  check(api, api->PJRT_Buffer_ReadyEvent(&ready), "PJRT_Buffer_ReadyEvent");
  await_event(api, ready.event, "PJRT_Buffer_CopyToDevice");
  return copy;
}

PJRT_Buffer_Type buffer_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return PJRT_Buffer_Type_F32;
    case DType::kFloat16: return PJRT_Buffer_Type_F16;
    case DType::kBFloat16: return PJRT_Buffer_Type_BF16;
    case DType::kFloat64: return PJRT_Buffer_Type_F64;
    case DType::kInt8: return PJRT_Buffer_Type_S8;
    case DType::kUInt8: return PJRT_Buffer_Type_U8;
    case DType::kInt16: return PJRT_Buffer_Type_S16;
    case DType::kInt32: return PJRT_Buffer_Type_S32;
    case DType::kInt64: return PJRT_Buffer_Type_S64;
    case DType::kBool: return PJRT_Buffer_Type_PRED;
    case DType::kUndefined: break;
  }
  return PJRT_Buffer_Type_INVALID;
}

PjrtExecutable::PjrtExecutable(std::shared_ptr<PjrtPlugin> plugin,
                               PJRT_LoadedExecutable* executable)
    : plugin_(std::move(plugin)), executable_(plugin_->api(), executable) {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, get);
  get.loaded_executable = executable;
  check(api, api->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  PJRT_ARGS(PJRT_Executable_NumOutputs_Args, outputs);
  outputs.executable = get.executable;
  PJRT_Error* error = api->PJRT_Executable_NumOutputs(&outputs);
  PJRT_ARGS(PJRT_Executable_Destroy_Args, destroy);
  destroy.executable = get.executable;
  PJRT_Error* destroy_error = api->PJRT_Executable_Destroy(&destroy);
  check(api, error, "PJRT_Executable_NumOutputs");
  check(api, destroy_error, "PJRT_Executable_Destroy");
  num_outputs_ = outputs.num_outputs;
}

std::vector<PjrtBuffer> PjrtExecutable::execute(std::span<const PjrtBuffer* const> arguments,
                                                PJRT_Device* device) const {
  const PJRT_Api* api = plugin_->api();
  std::vector<PJRT_Buffer*> inputs;
  for (const PjrtBuffer* argument : arguments) inputs.push_back(argument->get());
  std::vector<PJRT_Buffer*> outputs(num_outputs_, nullptr);
  PJRT_Buffer* const* argument_lists[] = {inputs.data()};
  PJRT_Buffer** output_lists[] = {outputs.data()};
  PJRT_Event* done = nullptr;
  const auto start = std::chrono::steady_clock::now();

  PJRT_ARGS(PJRT_ExecuteOptions, options);
  PJRT_ARGS(PJRT_LoadedExecutable_Execute_Args, args);
  args.executable = executable_.get();
  args.options = &options;
  args.argument_lists = argument_lists;
  args.num_devices = 1;
  args.num_args = inputs.size();
  args.output_lists = output_lists;
  args.device_complete_events = &done;
  args.execute_device = device;
  PJRT_Error* error = api->PJRT_LoadedExecutable_Execute(&args);
  // Own the outputs first, so they are destroyed whatever fails next.
  std::vector<PjrtBuffer> results;
  if (error == nullptr) {
    for (PJRT_Buffer* output : outputs) results.emplace_back(plugin_, output);
  }
  check(api, error, "PJRT_LoadedExecutable_Execute");
  // A program that runs longer than the watch is waited for asleep: a watching thread takes a
  // core from the plugin's threads while they work (bert at batch 2, 1.1 ms, ran 10% slower).
  const bool short_program =
      *last_run_nanoseconds_ <
      std::chrono::duration_cast<std::chrono::nanoseconds>(kWatchAwake).count();
  await_event(api, done, "PJRT_LoadedExecutable_Execute", short_program);
  *last_run_nanoseconds_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  return results;
}

std::string PjrtExecutable::serialize() const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_LoadedExecutable_GetExecutable_Args, get);
  get.loaded_executable = executable_.get();
  check(api, api->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  PJRT_ARGS(PJRT_Executable_Serialize_Args, args);
  args.executable = get.executable;
  PJRT_Error* error = api->PJRT_Executable_Serialize(&args);
  std::string bytes;
  if (error == nullptr) {
    bytes.assign(args.serialized_bytes, args.serialized_bytes_size);
    args.serialized_executable_deleter(args.serialized_executable);
  }
  PJRT_ARGS(PJRT_Executable_Destroy_Args, destroy);
  destroy.executable = get.executable;
  PJRT_Error* destroy_error = api->PJRT_Executable_Destroy(&destroy);
  check(api, error, "PJRT_Executable_Serialize");
  check(api, destroy_error, "PJRT_Executable_Destroy");
  return bytes;
}

PjrtClient::PjrtClient(std::shared_ptr<PjrtPlugin> plugin) : plugin_(std::move(plugin)) {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Client_Create_Args, args);
  check(api, api->PJRT_Client_Create(&args), plugin_->path() + ": PJRT_Client_Create");
  client_ = Handle<PJRT_Client>(api, args.client);
}

std::string PjrtClient::platform_name() const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Client_PlatformName_Args, args);
  args.client = client_.get();
  check(api, api->PJRT_Client_PlatformName(&args), "PJRT_Client_PlatformName");
  return {args.platform_name, args.platform_name_size};
}

std::vector<PjrtDeviceInfo> PjrtClient::devices() const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Client_Devices_Args, list);
  list.client = client_.get();
  check(api, api->PJRT_Client_Devices(&list), "PJRT_Client_Devices");
  std::vector<PjrtDeviceInfo> devices;
  for (size_t i = 0; i < list.num_devices; ++i) {
    PJRT_ARGS(PJRT_Device_GetDescription_Args, describe);
    describe.device = list.devices[i];
    check(api, api->PJRT_Device_GetDescription(&describe), "PJRT_Device_GetDescription");
    PJRT_ARGS(PJRT_DeviceDescription_Id_Args, id);
    id.device_description = describe.device_description;
    check(api, api->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
    PJRT_ARGS(PJRT_DeviceDescription_Kind_Args, kind);
    kind.device_description = describe.device_description;
    check(api, api->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
    PJRT_ARGS(PJRT_Device_IsAddressable_Args, addressable);
    addressable.device = list.devices[i];
    check(api, api->PJRT_Device_IsAddressable(&addressable), "PJRT_Device_IsAddressable");
    devices.push_back(
        {id.id, std::string(kind.device_kind, kind.device_kind_size), addressable.is_addressable});
  }
  return devices;
}

PjrtExecutable PjrtClient::compile_mlir(std::string_view module) const {
  const PJRT_Api* api = plugin_->api();
  std::string code(module);
  static constexpr std::string_view kFormat = "mlir";
  PJRT_ARGS(PJRT_Program, program);
  program.code = code.data();
  program.code_size = code.size();
  program.format = kFormat.data();
  program.format_size = kFormat.size();
  // A serialised xla.CompileOptionsProto: executable_build_options (field 3) holding
  // num_replicas = 1 (field 4) and num_partitions = 1 (field 5), and
  // compile_portable_executable = true (field 4). The CPU plugin aborts the process on empty
  // options (replica_count 0), so the counts are required, not defaults.
  static constexpr char kPortableOneReplica[] = {0x1A, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};
  const std::string_view options(kPortableOneReplica, sizeof kPortableOneReplica);
  PJRT_ARGS(PJRT_Client_Compile_Args, args);
  args.client = client_.get();
  args.program = &program;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  check(api, api->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  return PjrtExecutable(plugin_, args.executable);
}

PjrtExecutable PjrtClient::deserialize(std::string_view bytes) const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Executable_DeserializeAndLoad_Args, args);
  args.client = client_.get();
  args.serialized_executable = bytes.data();
  args.serialized_executable_size = bytes.size();
  check(api, api->PJRT_Executable_DeserializeAndLoad(&args), "PJRT_Executable_DeserializeAndLoad");
  return PjrtExecutable(plugin_, args.loaded_executable);
}

size_t PjrtClient::addressable_device_count() const {
  return addressable_devices(plugin_->api(), client_.get()).size();
}

PJRT_Device* PjrtClient::addressable_device(size_t index) const {
  auto targets = addressable_devices(plugin_->api(), client_.get());
  if (index >= targets.size()) {
    throw InputError(plugin_->path(), "no addressable PJRT device " + std::to_string(index) +
                                          " (the client has " + std::to_string(targets.size()) +
                                          ")");
  }
  return targets[index];
}

PjrtBuffer PjrtClient::to_device(const void* data, PJRT_Buffer_Type type,
                                 std::span<const int64_t> dims, size_t device) const {
  const PJRT_Api* api = plugin_->api();
  PJRT_ARGS(PJRT_Client_BufferFromHostBuffer_Args, args);
  args.client = client_.get();
  args.data = data;
  args.type = type;
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  args.device = addressable_device(device);
  check(api, api->PJRT_Client_BufferFromHostBuffer(&args), "PJRT_Client_BufferFromHostBuffer");
  PjrtBuffer buffer(plugin_, args.buffer);
  await_event(api, args.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  return buffer;
}

}  // namespace tandem::pjrt
