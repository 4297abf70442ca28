#include "host_buffer.h"

#include <vector>

#include "runtime.h"

#include "gpu_devices.h"
#include "transfer.h"

// Why not cudaMallocHost: the driver allocates and pins those pages itself, so they are already
// in place when the call returns and no mbind on our side can govern where they went. Instead
// the buffer is mapped here, its policy set with mbind, every page placed by our own first
// touch (the pattern fill), and only then handed to cudaHostRegister, which pins the pages
// where they already are. Placement is queried after registering: a long-term pin may migrate
// pages (Linux moves long-term-pinned pages out of ZONE_MOVABLE and CMA, where memory
// expanders are often onlined), and the CSV must say where the pinned pages really are.
HostBuffer::HostBuffer(std::size_t bytes, ns_pages pages, const ns_policy &policy, bool pin)
{
    ns_buffer_alloc(&buffer_, bytes, pages, &policy);
    fill_pattern(data(), 0, bytes);
    if (pin) {
        gpu_check(gpuHostRegister(buffer_.addr, bytes, gpuHostRegisterPortable),
                   NS_GPU_PREFIX "HostRegister of " + std::to_string(bytes) +
                       " bytes (pinning; try --pin_memory 0 or smaller sizes)");
        registered_ = true;
    }
}

HostBuffer::~HostBuffer()
{
    if (registered_)
        (void)gpuHostUnregister(buffer_.addr);
    ns_buffer_free(&buffer_);
}

std::string HostBuffer::page_fractions(std::size_t bytes) const
{
    ns_placement placement;
    ns_placement_clear(&placement);
    ns_placement_query(&placement, buffer_.addr, bytes, ns_pages_bytes(buffer_.pages));
    std::vector<char> text(16 * NS_MAX_NODES);
    ns_placement_format(&placement, text.data(), text.size());
    return text.data();
}
