#include "cuda_devices.h"

#include <cstdio>
#include <fstream>

#include "ns_error.h"

void cuda_check(cudaError_t status, const std::string &what)
{
    if (status != cudaSuccess)
        throw GpuError(what + " failed: " + cudaGetErrorString(status));
}

std::string pci_sysfs_id(const std::string &cuda_bus_id)
{
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    if (std::sscanf(cuda_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
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

std::vector<GpuInfo> cuda_devices_or_exit(int wanted)
{
    int count = 0;
    // With the runtime linked statically, this is where libcuda.so.1 is looked for; a machine
    // without the driver answers cudaErrorInsufficientDriver or cudaErrorNoDevice here.
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        ns_die("no CUDA device (%s); run on a node with an NVIDIA GPU and its driver, and check "
               "CUDA_VISIBLE_DEVICES",
               status != cudaSuccess ? cudaGetErrorString(status) : "the runtime reports 0 devices");
    }
    if (wanted > count)
        ns_die("--ngpus %d but only %d CUDA device%s visible; use --ngpus %d or fewer", wanted, count,
               count == 1 ? " is" : "s are", count);
    std::vector<GpuInfo> gpus;
    for (int id = 0; id < wanted; ++id) {
        cudaDeviceProp prop{};
        cuda_check(cudaGetDeviceProperties(&prop, id), "cudaGetDeviceProperties(" + std::to_string(id) + ")");
        char bus_id[64] = "";
        cuda_check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, id), "cudaDeviceGetPCIBusId(" + std::to_string(id) + ")");
        std::string pci = pci_sysfs_id(bus_id);
        gpus.push_back(GpuInfo{id, prop.name, pci, pci_numa_node(pci)});
    }
    return gpus;
}
