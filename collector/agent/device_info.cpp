// Device properties for the trace header, read through the driver the job already
// loaded (looked up at run time, so the agent itself does not link libcuda).
#include <cuda.h>
#include <dlfcn.h>

#include "agent.h"

namespace strata::agent {

std::vector<collector::DeviceRecord> query_devices() {
  std::vector<collector::DeviceRecord> out;
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return out;
  auto get_count = reinterpret_cast<CUresult (*)(int*)>(dlsym(lib, "cuDeviceGetCount"));
  auto get_device = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(lib, "cuDeviceGet"));
  auto get_name = reinterpret_cast<CUresult (*)(char*, int, CUdevice)>(dlsym(lib, "cuDeviceGetName"));
  auto get_mem = reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(dlsym(lib, "cuDeviceTotalMem_v2"));
  auto get_attr = reinterpret_cast<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(dlsym(lib, "cuDeviceGetAttribute"));
  int count = 0;
  if (!get_count || !get_device || !get_name || !get_mem || !get_attr || get_count(&count) != CUDA_SUCCESS) {
    dlclose(lib);
    return out;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (get_device(&dev, i) != CUDA_SUCCESS) continue;
    collector::DeviceRecord d;
    d.id = i;
    char name[256] = {};
    if (get_name(name, sizeof name - 1, dev) == CUDA_SUCCESS) d.name = name;
    size_t mem = 0;
    if (get_mem(&mem, dev) == CUDA_SUCCESS) d.total_global_mem = mem;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      return get_attr(&v, a, dev) == CUDA_SUCCESS ? v : 0;
    };
    d.compute_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.compute_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.num_sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    d.shared_mem_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    d.shared_mem_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    d.shared_mem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    out.push_back(std::move(d));
  }
  dlclose(lib);  // drops only our reference; the job keeps the driver loaded
  return out;
}

}  // namespace strata::agent
