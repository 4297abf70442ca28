// One GPU's host-side buffer: placed under the requested memory policy, optionally pinned,
// holding the verification pattern, and able to say where its pages are.
#pragma once

#include <cstddef>
#include <string>

#include "ns_buffer.h"
#include "ns_policy.h"

class HostBuffer {
public:
    HostBuffer(std::size_t bytes, ns_pages pages, const ns_policy &policy, bool pin);
    ~HostBuffer();
    HostBuffer(const HostBuffer &) = delete;
    HostBuffer &operator=(const HostBuffer &) = delete;

    unsigned char *data() const { return static_cast<unsigned char *>(buffer_.addr); }
    // "node:fraction,..." (every online node) for the first `bytes`, the part one copy of
    // that size moves; move_pages(2) status query.
    std::string page_fractions(std::size_t bytes) const;

private:
    ns_buffer buffer_{};
    bool registered_ = false;
};
