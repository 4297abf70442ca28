// GPU enumeration for gpu_xfer: which devices exist and which NUMA node each hangs off.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime.h"

// A GPU runtime failure; main() turns it into one `gpu_xfer: error:` line.
struct GpuError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws GpuError naming `what` and the runtime's reason unless status is gpuSuccess.
void gpu_check(gpuError_t status, const std::string &what);

struct GpuInfo {
    int id;            // runtime device ordinal (after CUDA_/HIP_VISIBLE_DEVICES)
    std::string name;
    std::string pci;   // sysfs spelling: "0000:c1:00.0"
    int node;          // NUMA node of the PCI device, -1 when the platform does not say
};

// The first `wanted` devices. With no usable device at all this prints one line containing
// "no CUDA device" (or "no HIP device") plus the runtime's reason and exits 2 (ns_die); asking for more devices than exist
// is a bad invocation and exits 2 as well.
std::vector<GpuInfo> gpu_devices_or_exit(int wanted);

// NUMA node of a PCI device from /sys/bus/pci/devices/<id>/numa_node; -1 when unknown.
int pci_numa_node(const std::string &pci_bus_id);

// The runtimes report "00000000:C1:00.0"-style ids; sysfs wants "0000:c1:00.0". Empty when unparsable.
std::string pci_sysfs_id(const std::string &runtime_bus_id);
