// shoal/shoal.hpp — everything shoal offers.
#pragma once

#include "shoal/core.hpp"
