#include "gpu_devices.h"

#include <cstdio>
#include <fstream>

#include "ns_error.h"

void gpu_check(gpuError_t status, const std::string &what)
{
    if (status != gpuSuccess)
        throw GpuError(what + " failed: " + gpuGetErrorString(status));
}

std::string pci_sysfs_id(const std::string &runtime_bus_id)
{
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    if (std::sscanf(runtime_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
        return "";
    char id[32];
    std::snprintf(id, sizeof id, "%04x:%02x:%02x.%x", domain & 0xffffu, bus, device, function);
    return id;
}

int pci_numa_node(const std::string &pci_bus_id)
{
    if (pci_bus_id.empty())
        return -1;
    std::ifstream file("/sys/bus/pci/devices/" + pci_bus_id + "/numa_node");
    int node = -1;
    if (!(file >> node))
        return -1;
    return node;
}

std::vector<GpuInfo> gpu_devices_or_exit(int wanted)
{
    int count = 0;
    // With the CUDA runtime linked statically, this is where libcuda.so.1 is looked for; a machine
    // without the driver answers cudaErrorInsufficientDriver or cudaErrorNoDevice here. The HIP
    // runtime answers hipErrorNoDevice when there is no /dev/kfd (no amdgpu driver) or no GPU.
    gpuError_t status = gpuGetDeviceCount(&count);
    if (status != gpuSuccess || count == 0) {
        ns_die("no " NS_GPU_RUNTIME " device (%s); run on a node with an " NS_GPU_VENDOR
               " GPU and its driver, and check " NS_GPU_VISIBLE_ENV,
               status != gpuSuccess ? gpuGetErrorString(status) : "the runtime reports 0 devices");
    }
    if (wanted > count)
        ns_die("--ngpus %d but only %d " NS_GPU_RUNTIME " device%s visible; use --ngpus %d or fewer", wanted, count,
               count == 1 ? " is" : "s are", count);
    std::vector<GpuInfo> gpus;
    for (int id = 0; id < wanted; ++id) {
        gpuDeviceProp prop{};
        gpu_check(gpuGetDeviceProperties(&prop, id), NS_GPU_PREFIX "GetDeviceProperties(" + std::to_string(id) + ")");
        char bus_id[64] = "";
        gpu_check(gpuDeviceGetPCIBusId(bus_id, sizeof bus_id, id), NS_GPU_PREFIX "DeviceGetPCIBusId(" + std::to_string(id) + ")");
        std::string pci = pci_sysfs_id(bus_id);
        gpus.push_back(GpuInfo{id, prop.name, pci, pci_numa_node(pci)});
    }
    return gpus;
}
