// shoal/core/detail/wait_sleep.hpp — whether shoal's waits may sleep: decided once per environment, used by
// spin_waiter (shoal/core/progress.hpp), hence by every wait in shoal (docs/core.md, "How shoal waits").
//
// A wait sleeps only so that a rank sharing its CPU with another rank of the job lets that rank run (Linux does not
// hand the CPU over on a yield alone). That happens only when this machine runs more of the job's ranks than the
// CPUs they may run on. Otherwise a sleep helps no rank and costs a great deal when other processes keep the CPUs
// busy: the sleeping rank gives its CPU to them and wakes late (docs/am.md, "Waits under load from other
// processes"). So the waits then only spin and yield.
//
// "This machine" is every rank of the job that sees the same kernel (/proc/sys/kernel/random/boot_id, else the
// processor name): ranks on emulated hosts (network namespaces on one machine, scripts/multihost.sh) or containers
// share its CPUs even though MPI puts them on different nodes. Its CPUs are the union of those ranks' affinity masks
// (a rank bound to one core by mpirun counts that core once, not the whole machine).
//
// SHOAL_WAIT_SLEEP=on|off (unset, empty or auto: the rule) overrides the decision on the rank that sets it.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/size_parse.hpp"

namespace shoal::detail {

/// The rule: a wait may sleep when the machine runs more ranks of the job than it has CPUs for them. An unknown CPU
/// count (0 or less) counts as too few: sleeping is the safe side when ranks might share a CPU.
constexpr bool waits_may_sleep(int ranks_on_machine, int cpus) noexcept {
  return cpus <= 0 || ranks_on_machine > cpus;
}

/// What an environment decided (runtime::waits; shoal::describe_paths() reports it).
struct wait_sleep_decision {
  int ranks = 1;       // ranks of the job on this machine
  int cpus = 0;        // CPUs those ranks may run on (the union of their affinity masks); 0: unknown
  bool sleep = true;   // waits_may_sleep(ranks, cpus), or SHOAL_WAIT_SLEEP's on/off
  bool forced = false; // SHOAL_WAIT_SLEEP decided, not the rule
};

/// Collective over `comm`. Counts the ranks on this machine and the CPUs they may run on, and applies the rule.
inline wait_sleep_decision decide_wait_sleep(MPI_Comm comm) {
  wait_sleep_decision d;
  const char* v = std::getenv("SHOAL_WAIT_SLEEP");
  if (v != nullptr && *v != '\0' && std::string_view(v) != "auto") {
    d.sleep = parse_flag(v, "SHOAL_WAIT_SLEEP");  // before the collective calls, like the other settings
    d.forced = true;
  }
  // Which machine: the kernel's boot id (shared by namespaces and containers on one machine), else the host name.
  std::string id;
  {
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::getline(boot, id);
  }
  if (id.empty()) {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    SHOAL_MPI(MPI_Get_processor_name(name, &len));
    id.assign(name, static_cast<std::size_t>(len));
  }
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: a color for MPI_Comm_split (a collision only adds sleeps)
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  int rank = 0;
  SHOAL_MPI(MPI_Comm_rank(comm, &rank));
  MPI_Comm machine = MPI_COMM_NULL;
  SHOAL_MPI(MPI_Comm_split(comm, static_cast<int>(h & 0x7fffffffu), rank, &machine));

  constexpr int words = CPU_SETSIZE / 64;
  std::uint64_t mask[words] = {};
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) mask[cpu / 64] |= std::uint64_t{1} << (cpu % 64);
    }
  }
  SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, mask, words, MPI_UINT64_T, MPI_BOR, machine));
  SHOAL_MPI(MPI_Comm_size(machine, &d.ranks));
  SHOAL_MPI(MPI_Comm_free(&machine));
  for (std::uint64_t w : mask) d.cpus += __builtin_popcountll(w);
  if (!d.forced) d.sleep = waits_may_sleep(d.ranks, d.cpus);
  return d;
}

}  // namespace shoal::detail
