// Timed host<->device copies for one GPU, nvbandwidth-style: a batch of cudaMemcpyAsync on the
// GPU's own stream between two events (pinned host memory) or between two host clock reads
// (pageable host memory, where the runtime stages through its own pinned buffer and the copy
// call itself does part of the work), the median of several such batches, and the data checked
// after the copies.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime.h"

enum class Direction {
    read,   // host to device ("R" in --operation_type, the seed's read_* columns)
    write,  // device to host ("W", write_* columns)
};

struct TransferPlan {
    std::size_t bytes;   // size of one copy
    int iterations;      // copies per timed batch (--iterations_per_bench)
    int samples;         // timed batches; the median is reported (--samples)
};

// Result of one (GPU, direction, size) measurement.
struct TransferTiming {
    double median_s;     // seconds per copy, median over the samples
    double min_s;
    double max_s;
};

// Both directions at once on one GPU ("B" in --operation_type): each direction's time per copy
// while the other runs beside it.
struct BidirectionalTiming {
    TransferTiming read;
    TransferTiming write;
};

// Called between samples so that all GPUs of a run start each batch together.
struct SampleBarrier {
    virtual void wait() = 0;
    virtual ~SampleBarrier() = default;
};

class GpuTransfer {
public:
    // `host` is this GPU's host buffer of at least `max_bytes`, already placed (and registered
    // with CUDA when `pinned`); its content is the verification pattern on entry and exit.
    // `host_return`, placed the same way, receives the device-to-host half of bidirectional
    // copies; without it (nullptr) measure_both is not available.
    GpuTransfer(int device, unsigned char *host, unsigned char *host_return, std::size_t max_bytes, bool pinned);
    ~GpuTransfer();
    GpuTransfer(const GpuTransfer &) = delete;
    GpuTransfer &operator=(const GpuTransfer &) = delete;

    // Times the copies and verifies what arrived; throws GpuError on a runtime failure and
    // VerificationError when the data differ.
    TransferTiming measure(Direction direction, const TransferPlan &plan, SampleBarrier &barrier);
    // Host to device from `host` and device to host into `host_return` at the same time, on
    // two streams; both received copies are verified.
    BidirectionalTiming measure_both(const TransferPlan &plan, SampleBarrier &barrier);

private:
    double time_batch(Direction direction, const TransferPlan &plan);
    std::pair<double, double> time_both(const TransferPlan &plan);
    void clear_destination(Direction direction, std::size_t bytes);
    void seed_device(unsigned char *device_buffer, gpuStream_t stream, std::size_t bytes);
    void verify_device_matches_pattern(std::size_t bytes);
    void verify_host_matches_pattern(const unsigned char *host, std::size_t bytes) const;

    int device_;
    unsigned char *host_;
    bool pinned_;
    unsigned char *device_buffer_ = nullptr;
    gpuStream_t stream_ = nullptr;
    gpuEvent_t start_ = nullptr;
    gpuEvent_t stop_ = nullptr;
    // The device-to-host half of bidirectional copies: its own buffers, stream and end event.
    unsigned char *host_return_ = nullptr;
    unsigned char *device_return_ = nullptr;
    gpuStream_t stream_return_ = nullptr;
    gpuEvent_t stop_return_ = nullptr;
};

struct VerificationError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Deterministic, offset-dependent content so that a shifted, truncated or stale copy is caught.
void fill_pattern(unsigned char *dst, std::size_t offset, std::size_t bytes);
