// shoal/core/checks.hpp — how much shoal checks the way it is used: the SHOAL_CHECKS level.
//
//   SHOAL_CHECKS=0  no checks beyond what an operation needs anyway.
//   SHOAL_CHECKS=1  cheap checks (the default when NDEBUG is defined, i.e. Release builds): arguments and ranges —
//                   the target rank exists, the bytes lie inside its segment, the global pointer is not null. A few
//                   compares per remote operation, next to a remote access that costs hundreds of nanoseconds.
//   SHOAL_CHECKS=2  cheap and expensive checks (the default without NDEBUG, i.e. Debug builds): in addition, every
//                   collective of a team first verifies that all ranks of the team entered the same collective (an
//                   extra small MPI_Iallreduce per collective; on a mismatch a second exchange of the call names) and
//                   throws usage_error naming both calls, instead of hanging or mixing the data of two collectives.
//
// The level is a compile-time setting (define SHOAL_CHECKS before including shoal, or -DSHOAL_CHECKS=N; shoal's own
// CMake build takes -DSHOAL_CHECKS=0|1|2). There is no run-time setting: a check compiled out costs nothing.
#pragma once

#ifndef SHOAL_CHECKS
#ifdef NDEBUG
#define SHOAL_CHECKS 1
#else
#define SHOAL_CHECKS 2
#endif
#endif

#if SHOAL_CHECKS < 0 || SHOAL_CHECKS > 2
#error "SHOAL_CHECKS must be 0 (off), 1 (cheap argument and range checks) or 2 (also collective matching)"
#endif
