// shoal/core.hpp — the one-sided core runtime: environment, teams and collectives, symmetric heap, global pointers,
// remote get/put/atomics, futures.
#pragma once

#include "shoal/core/clock.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/paths.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/serialize.hpp"
