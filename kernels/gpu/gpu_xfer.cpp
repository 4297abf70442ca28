// gpu_xfer: host-to-device ("read") and device-to-host ("write") copy latency and bandwidth
// between host memory under a chosen NUMA policy and one or several GPUs at once.
//
// What is measured: for each size and direction, each GPU copies `--iterations_per_bench`
// times the same `size` bytes between its own host buffer and its own device buffer with
// cudaMemcpyAsync on one stream; a batch is timed with CUDA events around it (pinned host
// memory) or with the host's monotonic clock until the stream drains (pageable memory, where
// the runtime does part of the work inside the call). `--samples` batches are timed; latency
// is the median time per copy and bandwidth is size / latency in GiB/s (2^30 bytes/s), each
// byte counted once. With several GPUs every batch starts together, so the numbers include
// contention for the host memory and the links. After the timed copies the received data are
// compared with the pattern that was sent; a mismatch ends the run with exit status 1.
//
// Host buffers are placed by the memory policy (--policy, or whatever numactl set), first
// touched, then pinned if asked; the pages each copy reads or writes are located with
// move_pages(2) and reported as page_fractions.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>

#include "gpu_devices.h"
#include "host_buffer.h"
#include "transfer.h"

#include "numasweep.h"
#include "ns_timing.h"

namespace {

const char usage[] =
    "usage: gpu_xfer [options]\n"
    "Host<->GPU copy latency and bandwidth with host memory under a NUMA policy.\n"
    "\n"
    "  --ngpus=N                 GPUs 0..N-1, run concurrently (default 1)\n"
    "  --sizes=LIST              copy sizes: sizes and ranges, A-B = powers of two from A to B,\n"
    "                            K/M/G binary, plain number = MiB (default 1K-2G)\n"
    "  --benchmark_bytes=BYTES   one copy size; a plain number is bytes (the seed's option)\n"
    "  --iterations_per_bench=N  copies per timed batch (default 100)\n"
    "  --samples=N               timed batches per size; the median is reported (default 3)\n"
    "  --operation_type=R,W,B    R = host to device, W = device to host, B = both at once on\n"
    "                            each GPU (bidir_* columns; default R,W)\n"
    "  --pin_memory=0|1          pin the host buffers with gpuHostRegister (default 1)\n"
    "Options also take their value as the next argument (--ngpus 2).\n";

struct Options {
    int ngpus = 1;
    std::vector<std::uint64_t> sizes;
    int iterations = 100;
    int samples = 3;
    bool read = true;
    bool write = true;
    bool both = false;
    bool pinned = true;
    ns_common_options common{};
};

enum {
    OPT_NGPUS = NS_OPT_KERNEL,
    OPT_SIZES,
    OPT_BENCHMARK_BYTES,
    OPT_ITERATIONS,
    OPT_SAMPLES,
    OPT_OPERATION_TYPE,
    OPT_PIN_MEMORY,
};

bool all_digits(const char *text)
{
    if (!*text)
        return false;
    for (; *text; ++text)
        if (*text < '0' || *text > '9')
            return false;
    return true;
}

void parse_operation_type(const char *text, Options &options)
{
    options.read = options.write = options.both = false;
    std::string list = text;
    std::size_t start = 0;
    while (true) {
        std::size_t comma = list.find(',', start);
        std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item == "R")
            options.read = true;
        else if (item == "W")
            options.write = true;
        else if (item == "B")
            options.both = true;
        else
            ns_die("--operation_type: '%s' is not a list of R, W and B (R = host to device, W = device to host, "
                   "B = both at once)", text);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
}

Options parse_options(int argc, char **argv)
{
    Options options;
    ns_common_defaults(&options.common);
    static const struct option longopts[] = {
        NS_COMMON_LONG_OPTIONS,
        {"ngpus", required_argument, nullptr, OPT_NGPUS},
        {"sizes", required_argument, nullptr, OPT_SIZES},
        {"benchmark_bytes", required_argument, nullptr, OPT_BENCHMARK_BYTES},
        {"iterations_per_bench", required_argument, nullptr, OPT_ITERATIONS},
        {"samples", required_argument, nullptr, OPT_SAMPLES},
        {"operation_type", required_argument, nullptr, OPT_OPERATION_TYPE},
        {"pin_memory", required_argument, nullptr, OPT_PIN_MEMORY},
        {nullptr, 0, nullptr, 0},
    };
    const char *sizes_option = nullptr;
    int code;
    while ((code = ns_getopt(argc, argv, longopts)) != -1) {
        if (ns_common_option(&options.common, code, optarg))
            continue;
        switch (code) {
        case OPT_NGPUS:
            options.ngpus = static_cast<int>(ns_int_arg("--ngpus", optarg, 1, 4096));
            break;
        case OPT_SIZES:
        case OPT_BENCHMARK_BYTES: {
            const char *name = code == OPT_SIZES ? "--sizes" : "--benchmark_bytes";
            if (sizes_option)
                ns_die("%s: copy sizes already given by %s; use one of --sizes and --benchmark_bytes, once",
                       name, sizes_option);
            sizes_option = name;
            if (code == OPT_BENCHMARK_BYTES && all_digits(optarg)) {
                // The seed passes bytes; the shared size syntax would read a plain number as MiB.
                errno = 0;
                unsigned long long bytes = std::strtoull(optarg, nullptr, 10);
                if (bytes == 0 || errno == ERANGE)
                    ns_die("--benchmark_bytes: '%s' is not a positive number of bytes", optarg);
                options.sizes.assign(1, bytes);
            } else if (code == OPT_BENCHMARK_BYTES) {
                options.sizes.assign(1, ns_size_arg(name, optarg));
            } else {
                std::uint64_t *sizes = nullptr;
                std::size_t count = ns_sizes_arg(name, optarg, &sizes);
                options.sizes.assign(sizes, sizes + count);
                std::free(sizes);
            }
            break;
        }
        case OPT_ITERATIONS:
            options.iterations = static_cast<int>(ns_int_arg("--iterations_per_bench", optarg, 1, 1000000));
            break;
        case OPT_SAMPLES:
            options.samples = static_cast<int>(ns_int_arg("--samples", optarg, 1, 10000));
            break;
        case OPT_OPERATION_TYPE:
            parse_operation_type(optarg, options);
            break;
        case OPT_PIN_MEMORY:
            if (std::strcmp(optarg, "0") != 0 && std::strcmp(optarg, "1") != 0)
                ns_die("--pin_memory: '%s' is not 0 or 1 (1 = pin host buffers with gpuHostRegister)", optarg);
            options.pinned = optarg[0] == '1';
            break;
        default:
            ns_die("unhandled option code %d; see gpu_xfer --help", code);
        }
    }
    ns_no_positional(argc, argv);
    if (options.common.help) {
        std::fputs(usage, stdout);
        std::fputs(ns_common_help(), stdout);
        std::exit(0);
    }
    if (options.common.version) {
        ns_print_version(NS_BUILD_COMMIT, NS_BUILD_FLAGS);
        std::exit(0);
    }
    if (!sizes_option) {
        for (std::uint64_t size = std::uint64_t(1) << 10; size <= std::uint64_t(2) << 30; size *= 2)
            options.sizes.push_back(size);
    }
    ns_common_finish(&options.common);
    return options;
}

// Lets all GPU threads start each timed batch together.
class ThreadBarrier final : public SampleBarrier {
public:
    explicit ThreadBarrier(unsigned parties) { pthread_barrier_init(&barrier_, nullptr, parties); }
    ~ThreadBarrier() override { pthread_barrier_destroy(&barrier_); }
    void wait() override { pthread_barrier_wait(&barrier_); }

private:
    pthread_barrier_t barrier_;
};

// Passes waits on to the shared barrier and counts them, so that a GPU whose measurement fails
// can still arrive at the barriers it has not reached yet; otherwise the others would wait forever.
class CountingBarrier final : public SampleBarrier {
public:
    explicit CountingBarrier(SampleBarrier &shared) : shared_(shared) {}
    void wait() override
    {
        ++passed_;
        shared_.wait();
    }
    void drain(int total)
    {
        while (passed_ < total)
            wait();
    }

private:
    SampleBarrier &shared_;
    int passed_ = 0;
};

// One measurement (a size, a direction) on all GPUs at once: measure(transfer, barrier) on one
// thread per GPU. Rethrows the first failure of any GPU. on_cpu[g]: lowered to the share of the
// measurement's wall time GPU g's thread ran on its CPU (CPU time over wall time). The thread
// copies pageable memory itself, and while pinned copies run it waits in the runtime, which spins
// where there are more CPUs than GPU contexts (the runtimes' default scheduling): a share well
// under 1 means other work had its CPU and the timings include that wait.
template <typename Timing, typename Measure>
std::vector<Timing> measure_all(std::vector<std::unique_ptr<GpuTransfer>> &transfers, int samples,
                                std::vector<double> &on_cpu, Measure measure)
{
    std::size_t n = transfers.size();
    std::vector<Timing> timings(n);
    std::vector<std::exception_ptr> failures(n);
    ThreadBarrier barrier(static_cast<unsigned>(n));
    std::vector<std::thread> threads;
    for (std::size_t g = 0; g < n; ++g) {
        threads.emplace_back([&, g] {
            CountingBarrier counting(barrier);
            try {
                double cpu0 = ns_thread_cpu_seconds(), t0 = ns_seconds();
                timings[g] = measure(*transfers[g], counting);
                double wall = ns_seconds() - t0;
                if (wall > 0)
                    on_cpu[g] = std::min(on_cpu[g], (ns_thread_cpu_seconds() - cpu0) / wall);
            } catch (...) {
                failures[g] = std::current_exception();
                counting.drain(samples);
            }
        });
    }
    for (std::thread &thread : threads)
        thread.join();
    for (std::exception_ptr &failure : failures)
        if (failure)
            std::rethrow_exception(failure);
    return timings;
}

std::vector<TransferTiming> measure_direction(std::vector<std::unique_ptr<GpuTransfer>> &transfers,
                                              Direction direction, const TransferPlan &plan,
                                              std::vector<double> &on_cpu)
{
    return measure_all<TransferTiming>(transfers, plan.samples, on_cpu,
                                       [&](GpuTransfer &transfer, SampleBarrier &barrier) {
                                           return transfer.measure(direction, plan, barrier);
                                       });
}

std::string format_list(const int *values, int count)
{
    std::vector<char> text(8 * (count + 1));
    ns_format_int_list(values, count, text.data(), text.size());
    return text.data();
}

// Quote a list-valued field: "0,3".
std::string quoted(const std::string &field)
{
    return field.find(',') == std::string::npos ? field : "\"" + field + "\"";
}

struct PolicyColumns {
    std::string policy;   // as the kernel reports it for the buffer
    std::string nodes;
    std::string weights;
};

PolicyColumns describe_policy(const Options &options, const HostBuffer &buffer)
{
    ns_observed_policy observed;
    ns_policy_observe(buffer.data(), &observed);
    PolicyColumns columns;
    columns.policy = observed.name;
    const ns_policy &asked = options.common.policy;
    // Nodes as the user wrote them keep their pairing with --weights; an inherited policy has
    // only the kernel's node mask to show.
    columns.nodes = asked.kind != NS_POLICY_INHERIT ? format_list(asked.nodes, asked.nnodes)
                                                    : format_list(observed.nodes, observed.nnodes);
    if (asked.kind == NS_POLICY_WEIGHTED) {
        std::vector<int> weights(NS_MAX_NODES);
        ns_policy_current_weights(&asked, weights.data());
        columns.weights = format_list(weights.data(), asked.nnodes);
    } else if (observed.nweights > 0) {
        columns.weights = format_list(observed.weights, observed.nweights);
    }
    return columns;
}

const char csv_header[] =
    "ngpus,numa_nodes,numa_weight,access_size(bytes),read_latency(ms),read_bw(gib/s),write_latency(ms),"
    "write_bw(gib/s),gpu,gpu_node,pinned,policy,page_fractions,host,bidir_read_bw(gib/s),bidir_write_bw(gib/s),"
    "on_cpu_pct\n";

std::string latency_ms(bool measured, const TransferTiming &timing)
{
    if (!measured)
        return "";
    char text[32];
    std::snprintf(text, sizeof text, "%.6f", timing.median_s * 1e3);
    return text;
}

std::string bandwidth_gib_s(bool measured, const TransferTiming &timing, std::uint64_t bytes)
{
    if (!measured)
        return "";
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", static_cast<double>(bytes) / timing.median_s / std::pow(2.0, 30));
    return text;
}

const char *dash(const std::string &field)
{
    return field.empty() ? "-" : field.c_str();
}

void echo_configuration(const Options &options, const std::vector<GpuInfo> &gpus, const PolicyColumns &policy)
{
    std::printf("gpu_xfer: host<->GPU copies with gpuMemcpyAsync, %d copies per timed batch on one stream per GPU,\n"
                "median of %d batches; timed with %s\n",
                options.iterations, options.samples,
                options.pinned ? NS_GPU_RUNTIME " events (pinned host memory)" : "the host clock until the stream drains (pageable host memory)");
    std::printf("bandwidth = copy size / median time per copy, GiB/s = 2^30 bytes/s; read = host to device, write = device to host\n");
    if (options.both)
        std::printf("bidirectional: host to device and device to host at once on two streams per GPU, each direction\n"
                    "timed from the common start to its own last copy%s\n",
                    options.pinned ? "" : " (pageable: both given the whole batch's time)");
    for (const GpuInfo &gpu : gpus)
        std::printf("GPU %d: %s, PCI %s, NUMA node %d\n", gpu.id, gpu.name.c_str(),
                    gpu.pci.empty() ? "unknown" : gpu.pci.c_str(), gpu.node);
    std::printf("host memory: policy %s, nodes %s%s%s, pages %s, %s\n", policy.policy.c_str(),
                policy.nodes.empty() ? "(any)" : policy.nodes.c_str(), policy.weights.empty() ? "" : ", weights ",
                policy.weights.c_str(), ns_pages_name(options.common.pages), options.pinned ? "pinned" : "pageable");
    std::printf("%4s %12s %12s %12s %12s %12s %12s %12s  %s\n", "gpu", "size", "read_ms", "read_GiB/s", "write_ms",
                "write_GiB/s", "bidir_r_GiB/s", "bidir_w_GiB/s", "page_fractions");
}

}  // namespace

int main(int argc, char **argv)
{
    ns_set_program("gpu_xfer");
    Options options = parse_options(argc, argv);
    const ns_common_options &common = options.common;

    std::uint64_t max_bytes = 0;
    for (std::uint64_t size : options.sizes)
        max_bytes = std::max(max_bytes, size);

    // Host memory is checked before the devices, so an impossible size is refused the same way
    // on every machine; each GPU gets its own host buffer of the largest size.
    std::uint64_t page = ns_pages_bytes(common.pages);
    std::uint64_t per_gpu = (max_bytes + page - 1) / page * page * (options.both ? 2 : 1);
    ns_check_free_memory(&common.policy, common.pages, per_gpu * static_cast<std::uint64_t>(options.ngpus));
    std::vector<GpuInfo> gpus = gpu_devices_or_exit(options.ngpus);
    ns_policy_apply_weights(&common.policy);

    char host[256];
    ns_hostname(host, sizeof host);
    try {
        std::vector<std::unique_ptr<HostBuffer>> buffers, returns;
        std::vector<std::unique_ptr<GpuTransfer>> transfers;
        for (const GpuInfo &gpu : gpus) {
            buffers.push_back(std::make_unique<HostBuffer>(max_bytes, common.pages, common.policy, options.pinned));
            if (options.both)
                returns.push_back(std::make_unique<HostBuffer>(max_bytes, common.pages, common.policy, options.pinned));
            transfers.push_back(std::make_unique<GpuTransfer>(gpu.id, buffers.back()->data(),
                                                              options.both ? returns.back()->data() : nullptr,
                                                              max_bytes, options.pinned));
        }
        PolicyColumns policy = describe_policy(options, *buffers.front());
        if (!common.quiet)
            echo_configuration(options, gpus, policy);

        ns_text csv{};
        ns_text_append(&csv, csv_header);
        for (std::uint64_t size : options.sizes) {
            TransferPlan plan{size, options.iterations, options.samples};
            std::vector<TransferTiming> reads(gpus.size()), writes(gpus.size());
            std::vector<BidirectionalTiming> boths(gpus.size());
            std::vector<double> on_cpu(gpus.size(), 1.0);
            if (options.read)
                reads = measure_direction(transfers, Direction::read, plan, on_cpu);
            if (options.write)
                writes = measure_direction(transfers, Direction::write, plan, on_cpu);
            if (options.both)
                boths = measure_all<BidirectionalTiming>(
                    transfers, plan.samples, on_cpu,
                    [&](GpuTransfer &transfer, SampleBarrier &barrier) { return transfer.measure_both(plan, barrier); });
            for (std::size_t g = 0; g < gpus.size(); ++g) {
                std::string fractions = buffers[g]->page_fractions(size);
                std::string read_ms = latency_ms(options.read, reads[g]);
                std::string read_bw = bandwidth_gib_s(options.read, reads[g], size);
                std::string write_ms = latency_ms(options.write, writes[g]);
                std::string write_bw = bandwidth_gib_s(options.write, writes[g], size);
                std::string both_read_bw = bandwidth_gib_s(options.both, boths[g].read, size);
                std::string both_write_bw = bandwidth_gib_s(options.both, boths[g].write, size);
                ns_text_printf(&csv, "%zu,%s,%s,%" PRIu64 ",%s,%s,%s,%s,%d,%d,%d,%s,%s,%s,%s,%s,%.1f\n", gpus.size(),
                               quoted(policy.nodes).c_str(), quoted(policy.weights).c_str(), size, read_ms.c_str(),
                               read_bw.c_str(), write_ms.c_str(), write_bw.c_str(), gpus[g].id, gpus[g].node,
                               options.pinned ? 1 : 0, policy.policy.c_str(), quoted(fractions).c_str(), host,
                               both_read_bw.c_str(), both_write_bw.c_str(), 100 * on_cpu[g]);
                if (!common.quiet) {
                    char size_text[32];
                    ns_format_size(size, size_text, sizeof size_text);
                    std::printf("%4d %12s %12s %12s %12s %12s %12s %12s  %s\n", gpus[g].id, size_text, dash(read_ms), dash(read_bw),
                                dash(write_ms), dash(write_bw), dash(both_read_bw), dash(both_write_bw),
                                fractions.c_str());
                    std::fflush(stdout);
                }
            }
            // Rewritten after every size, so an interrupted sweep keeps what it measured.
            if (common.csv)
                ns_csv_write(common.csv, &csv);
        }
        ns_text_free(&csv);
        if (!common.quiet)
            std::printf("verification: the data of every timed copy matched the pattern sent\n");
    } catch (const VerificationError &failure) {
        std::fprintf(stderr, "gpu_xfer: error: %s; the transfer path is corrupting data, results not trustworthy\n",
                     failure.what());
        return 1;
    } catch (const GpuError &failure) {
        ns_die("%s", failure.what());
    }
    return 0;
}
