// shoal/containers/detail/owner_table/placement.hpp — which team rank owns a key, and the layout: co-located (every
// rank owns a shard) or service (the server ranks of dist_map_options::servers own the data, the others are clients).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/containers/detail/fixed_divisor.hpp"
#include "shoal/containers/dist_map_options.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/hash.hpp"

namespace shoal::detail {

template <class K>
class owner_placement {
 public:
  /// Validates the options for a team of `ranks` ranks and key type K (`name` starts the error messages).
  owner_placement(const dist_map_options& opts, int me, int ranks, const std::string& name)
      : placement_(opts.placement), seed_(opts.seed),
        owner_count_(opts.servers.empty() ? static_cast<std::uint64_t>(ranks) : opts.servers.size()) {
    opts.validate(ranks);
    if constexpr (!std::is_integral_v<K>) {
      if (placement_ == key_placement::cyclic) {
        throw usage_error(name + ": dist_map_options::placement = key_placement::cyclic needs an integral key type; "
                                 "use key_placement::hashed");
      }
    }
    if (opts.servers.empty()) {
      for (int r = 0; r < ranks; ++r) owners_.push_back(r);
    } else {
      owners_ = opts.servers;
      service_ = true;
      clients_ = ranks - static_cast<int>(owners_.size());
    }
    for (int s : owners_) owns_shard_ = owns_shard_ || s == me;
    if (owners_.size() == 1) only_owner_ = owners_[0];
  }

  int owner_of(const K& key) const {
    if (only_owner_ >= 0) return only_owner_;  // one owner (one rank, or one server): no hash, no division
    const std::size_t n = owners_.size();
    if constexpr (std::is_integral_v<K>) {
      if (placement_ == key_placement::cyclic) {
        return owners_[owner_count_.remainder(static_cast<std::make_unsigned_t<K>>(key))];
      }
    }
    return hashed_owner(key, n);
  }
  /// owner_of(key_at(i)) into out[i] for i in 0..n-1, the layout chosen once for the run (a batch's cut).
  template <class KeyAt>
  void owners_of(std::size_t n, KeyAt&& key_at, std::uint32_t* out) const {
    const std::size_t m = owners_.size();
    const int* owners = owners_.data();
    if (m == 1) {
      std::fill_n(out, n, static_cast<std::uint32_t>(owners[0]));
      return;
    }
    if constexpr (std::is_integral_v<K>) {
      if (placement_ == key_placement::cyclic) {
        const fixed_divisor count = owner_count_;
        for (std::size_t i = 0; i < n; ++i) {
          const auto key = static_cast<std::make_unsigned_t<K>>(static_cast<K>(key_at(i)));
          out[i] = static_cast<std::uint32_t>(owners[count.remainder(key)]);
        }
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {  // the hash inlined here: a batch's loop, no call per key
      out[i] = static_cast<std::uint32_t>(owners[scaled(hash_value(static_cast<K>(key_at(i)), seed_), m)]);
    }
  }
  const std::vector<int>& owners() const { return owners_; }
  /// True when this rank stores data (every rank co-located; the servers in the service layout).
  bool owns_shard() const { return owns_shard_; }
  bool is_service() const { return service_; }
  /// Service layout: the number of client ranks (0 co-located).
  int clients() const { return clients_; }

 private:
  /// Hashed placement: the 64-bit hash scaled to [0, n) by a multiply and a shift (Lemire's fast range) instead of a
  /// division.
  static std::size_t scaled(std::uint64_t hash, std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(hash) * n) >> 64);
  }
  /// Out of line, so that owner_of stays small enough to be inlined into the loops that cut batches: with XXH3 inlined
  /// here it was not, and a batch's positions paid a call per push_back (find_batch, cyclic placement, 10 -> 16 ns
  /// per key).
  [[gnu::noinline]] int hashed_owner(const K& key, std::size_t n) const {
    return owners_[scaled(hash_value(key, seed_), n)];
  }

  key_placement placement_;
  std::uint64_t seed_;
  fixed_divisor owner_count_;  // owners_.size(): cyclic placement is the key modulo it
  std::vector<int> owners_;
  int only_owner_ = -1;  // owners_[0] when it is the only owner, else -1
  bool service_ = false;
  bool owns_shard_ = false;
  int clients_ = 0;
};

}  // namespace shoal::detail
