// shoal/shoal.hpp — everything shoal offers.
#pragma once

#include "shoal/am.hpp"
#include "shoal/core.hpp"
