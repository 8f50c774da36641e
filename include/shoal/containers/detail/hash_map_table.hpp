// shoal/containers/detail/hash_map_table.hpp — where shoal::hash_map keeps its buckets: the block distribution over
// the team, a key's home bucket and probe sequence, the bucket layout and the addresses of its fields, and the
// allocation of the parts (containers/hash_map.hpp describes the whole; its operations live there).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/fixed_divisor.hpp"
#include "shoal/containers/detail/stored.hpp"
#include "shoal/containers/storage.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

template <class K, class V>
class hash_map_table {
 protected:
  using key_storage = storage_t<K>;
  using value_storage = storage_t<V>;
  using stored_key = typename key_storage::stored_type;
  using stored_value = typename value_storage::stored_type;

 public:
  static constexpr bool uses_blobs = key_storage::uses_blobs || value_storage::uses_blobs;

  struct entry {
    stored_key key;
    stored_value value;
  };
  /// One bucket: the status word of the slot protocol (detail/hash_map_slot.hpp), then the entry.
  struct bucket {
    std::uint32_t status;
    entry e;
  };
  static_assert(std::is_trivially_copyable_v<bucket>);

 protected:
  /// A key's home: the owning team rank, the home bucket's index in its part and the part's bucket count.
  struct place {
    int rank;
    std::size_t home;
    std::size_t count;
  };

  hash_map_table(std::uint64_t seed, const shoal::team& team) : seed_(seed), reg_(team, "shoal::hash_map") {
    if (uses_blobs) blobs_ = std::make_unique<blob_heap>(team);
  }
  hash_map_table(hash_map_table&& o) noexcept
      : seed_(o.seed_), capacity_(o.capacity_), block_(o.block_), by_block_(o.by_block_),
        parts_(std::exchange(o.parts_, {})), own_(std::exchange(o.own_, nullptr)), blobs_(std::move(o.blobs_)),
        probes_(o.probes_), reg_(std::move(o.reg_)) {}

  std::size_t me() const { return static_cast<std::size_t>(reg_.rank()); }
  const shoal::team& table_team() const noexcept { return reg_.team(); }

  /// Collective over the team: parts for `capacity` buckets in total, cleared.
  void allocate_parts(std::size_t capacity) {
    const auto p = static_cast<std::size_t>(table_team().size());
    const std::size_t block = (capacity + p - 1) / p;
    set_parts(reg_.allocate_collective<bucket>(block), capacity, block);
    std::memset(static_cast<void*>(own_), 0, block_ * sizeof(bucket));
    table_team().barrier();
  }
  /// Takes `parts` (team rank r's block of `block` buckets at parts[r], `capacity` buckets in all) as the table.
  void set_parts(std::vector<global_ptr<bucket>> parts, std::size_t capacity, std::size_t block) {
    parts_ = std::move(parts);
    capacity_ = capacity;
    block_ = block;
    by_block_ = fixed_divisor(block);
    own_ = parts_[me()].local();
  }
  void free_part(std::vector<global_ptr<bucket>>& parts) {
    if (!parts.empty()) reg_.deallocate(parts[me()]);
    if (&parts == &parts_) own_ = nullptr;
    parts.clear();
  }

  /// Buckets of team rank r's part.
  std::size_t local_count(std::size_t r) const {
    const std::size_t start = r * block_;
    return start >= capacity_ ? 0 : std::min(block_, capacity_ - start);
  }

  place placement(const typename key_storage::value_type& key) const {
    reg_.check();
    const std::uint64_t h = hash_value(key, seed_);
    const auto slot = static_cast<std::uint64_t>((static_cast<unsigned __int128>(h) * capacity_) >> 64);
    const auto r = static_cast<std::size_t>(by_block_.quotient(slot));
    return place{static_cast<int>(r), static_cast<std::size_t>(slot - r * block_), local_count(r)};
  }
  global_ptr<bucket> home_bucket(const place& where) const {
    return parts_[static_cast<std::size_t>(where.rank)] + static_cast<std::ptrdiff_t>(where.home);
  }

  /// Calls visit(bucket) along the probe sequence until it returns true; false when every bucket was visited.
  /// Triangular probing (home + i(i+1)/2) over the next power of two visits every bucket of the part exactly once.
  template <class Visit>
  bool probe(const place& where, Visit&& visit) const {
    const auto part = parts_[static_cast<std::size_t>(where.rank)];
    return probe_positions(where, [&](std::size_t pos) { return visit(part + static_cast<std::ptrdiff_t>(pos)); });
  }
  /// probe's sequence as bucket positions in the part (visit(pos)): the owner's plain-store paths index own_.
  template <class Visit>
  bool probe_positions(const place& where, Visit&& visit) const {
    const std::uint64_t span = std::bit_ceil(static_cast<std::uint64_t>(where.count));
    const std::uint64_t mask = span - 1;
    std::uint64_t pos = where.home;
    for (std::uint64_t i = 0; i < span; ++i) {
      pos = (pos + i) & mask;
      if (pos >= where.count) continue;
      ++probes_;
      if (visit(static_cast<std::size_t>(pos))) return true;
    }
    return false;
  }

  static global_ptr<std::uint32_t> status_of(global_ptr<bucket> b) { return b.template reinterpret<std::uint32_t>(); }
  static global_ptr<entry> entry_of(global_ptr<bucket> b) { return field<entry>(b, offsetof(bucket, e)); }
  static global_ptr<stored_key> key_of(global_ptr<bucket> b) {
    return field<stored_key>(b, offsetof(bucket, e) + offsetof(entry, key));
  }
  static global_ptr<stored_value> value_of(global_ptr<bucket> b) {
    return field<stored_value>(b, offsetof(bucket, e) + offsetof(entry, value));
  }

  [[noreturn]] void throw_full(const place& where) const {
    throw container_full("shoal::hash_map: no free bucket for a new key in rank " + std::to_string(where.rank) +
                         "'s part (" + std::to_string(where.count) + " buckets of a total capacity of " +
                         std::to_string(capacity_) +
                         "); the table is full (erased buckets are reused only after resize): construct it with a "
                         "larger capacity or call resize(new_capacity) (collective)");
  }

  std::uint64_t seed_;
  std::size_t capacity_ = 0;
  std::size_t block_ = 0;
  fixed_divisor by_block_;  // slot -> owner without a division instruction
  std::vector<global_ptr<bucket>> parts_;
  bucket* own_ = nullptr;  // this rank's part, parts_[me()].local()
  std::unique_ptr<blob_heap> blobs_;
  mutable std::uint64_t probes_ = 0;
  // Declared last, destroyed first: the team's barrier, then this rank's part; then blobs_ frees its blobs.
  registration reg_;

 private:
  template <class F>
  static global_ptr<F> field(global_ptr<bucket> b, std::size_t offset) {
    return (b.template reinterpret<std::byte>() + static_cast<std::ptrdiff_t>(offset)).template reinterpret<F>();
  }
};

}  // namespace shoal::detail
