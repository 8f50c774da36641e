// shoal/containers/detail/owner_table/shard.hpp — an owner's share of a dist_map / dist_multimap: a shoal::local
// table (of the chosen family) and the count of entries it stores under capacity_per_rank. The operations of the
// containers, run at the owner, change both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/local/table.hpp"

namespace shoal::detail {

template <class K, class Stored, class Family>
class owner_shard {
 public:
  using table_type = typename Family::template table<K, Stored>;
  static_assert(local::table<table_type>, "the local-table family must provide a shoal::local::table");

  /// `capacity`: entries this owner may hold, 0 = unlimited.
  explicit owner_shard(std::size_t capacity) : capacity_(capacity) {}

  table_type& table() { return table_; }
  const table_type& table() const { return table_; }
  /// Entries (key-value pairs) stored here.
  std::size_t entries() const { return entries_; }
  void add_entries(std::size_t n) { entries_ += n; }
  void remove_entries(std::size_t n) { entries_ -= n; }
  /// How many more entries fit.
  std::size_t room() const { return capacity_ == 0 ? SIZE_MAX : capacity_ - entries_; }
  std::size_t capacity() const { return capacity_; }

 private:
  table_type table_;
  std::size_t capacity_;
  std::size_t entries_ = 0;
};

}  // namespace shoal::detail
