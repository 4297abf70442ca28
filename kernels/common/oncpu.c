#include "ns_oncpu.h"
#include "ns_timing.h"

void ns_oncpu_begin(ns_oncpu_mark *m)
{
    m->cpu_s = ns_thread_cpu_seconds();
    m->wall_s = ns_seconds();
}

double ns_oncpu_share(const ns_oncpu_mark *m)
{
    double cpu = ns_thread_cpu_seconds() - m->cpu_s, wall = ns_seconds() - m->wall_s;
    if (wall <= 0)
        return 1.0;
    double share = cpu / wall;
    return share > 1.0 ? 1.0 : share;
}
