// shoal/am.hpp — active messages: typed remote calls with per-destination aggregation, futures and a quiescence
// barrier (docs/am.md).
#pragma once

#include "shoal/am/control.hpp"
#include "shoal/am/remote_call.hpp"
#include "shoal/core.hpp"
