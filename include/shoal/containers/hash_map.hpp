// shoal/containers/hash_map.hpp — a distributed hash table on one-sided operations (BCL §5.2).
//
// Model: one-sided (RDMA), distributed. One logical array of `capacity` buckets, block-distributed over the ranks
// (rank r holds buckets [r*B, (r+1)*B), B = ceil(capacity / ranks)). XXH3 of the key (shoal::hash_value) picks a
// home bucket; collisions are resolved by open addressing with quadratic (triangular) probing that stays inside the
// home bucket's block, so every operation on a key talks to one rank — its owner — and the owner can insert with
// plain CPU instructions (local_insert, used by hash_map_buffer). Triangular probing over the next power of two
// visits every bucket of the block exactly once, so "no free bucket" really means the block is full.
//
// Each bucket is {32-bit status, key, value}; the status word's states (free, reserved, ready, erased) and its count
// of readers, and which remote atomic moves it, are the slot protocol (containers/detail/hash_map_slot.hpp): a
// writer reserves a free bucket with compare_exchange and publishes it with fetch_add, a fully atomic reader enters
// and leaves with fetch_add — on the MPI path one MPI_Compare_and_swap and the rest MPI_Fetch_and_op, the cheaper
// call. The layout, placement and probing are in containers/detail/hash_map_table.hpp. Keys and values are stored as
// described in containers/storage.hpp: trivially copyable types inline, shoal::fixed<T, N> inline serialized, other
// types (std::string, std::vector, cereal types) as blobs.
//
// Operations. Who: collective = every rank of the map's team, in the same order; any rank = one rank's call, no
// other rank takes part; owner only = only the rank that owns the key may call it. Costs per probed bucket, best
// case is one probe; A remote atomic, R remote read, W remote write (+ flush), B barrier; a blob key or value adds
// one R when it is read:
//   hash_map(capacity, opts = {}, team = world())
//                                         collective  allocate and clear on the team's ranks            B
//   ~hash_map                             collective  then each rank frees its part and blobs (no-op after
//                                                     finalize)                                          B
//   insert(k, v)                          any rank    CAS free->reserved, put key and value, fetch_add ->ready
//                                                     2A + W; on a ready bucket of another key: A + R, next
//   insert_or_assign(k, v)                any rank    as insert; an existing key: R + 2A (exclusive CAS,
//                                                     fetch_add) + R + W
//   find(k)                               any rank    fetch_add reader in, get entry, fetch_add out    2A + R
//                                                     (a free bucket: in and out again, 2A; erased: A)
//   find(k, promise::find)                any rank    one get of the whole bucket                      R
//   prefetch(k)                           any rank    a hint before find: loads k's home bucket into the cache
//                                                     where it is mapped here (own part, same-host shm)  local
//   find_many(keys, out)                  any rank    find(k, promise::find) of n keys, their home buckets read
//                                                     together (shoal::get_many); a home bucket of another key
//                                                     goes on probing as find does. Inline keys and values
//                                                     only (no blobs)                                   n R, overlapped
//   erase(k)                              any rank    load, get key, CAS ready->reserved, get value, fetch_add
//                                                     ->erased                                          3A + 2R
//   owner(k), capacity(), probe_count()   any rank    arithmetic / this rank's counter                 -
//   local_insert(k, v)                    owner only  plain CPU stores into this rank's part (usage_error
//                                                     for a key of another rank)                       local
//   local_insert_or_assign(k, v)          owner only  as local_insert, replacing an existing value     local
//   local_prefetch(k)                     any rank    a cache hint before local_insert; nothing off the owner
//   local_size()                          any rank    entries in the calling rank's part               local scan
//   size()                                collective  entries in the whole table                      B + local scan
//   resize(new_capacity)                  collective  rehash every live entry into a new array        2B + n(2A + W)
//   reclaim()                             collective  return released blobs of other ranks to them    B
// A miss stops at the first free bucket of the probe sequence: its cost is the probe length, never the table
// (BCL's find scans the whole table on a miss). Erased buckets are skipped by find and are not reused by insert;
// resize() drops them.
//
// Concurrency promises (promise.hpp): the default, promise::any, is fully atomic — insert, insert_or_assign, find
// and erase may all run at once on any keys. find(k, p) with p.within(promise::find) (only finds until the next
// barrier) reads each probed bucket with one get and no atomics. local_insert / local_insert_or_assign are valid only
// while no other rank touches this rank's part (CPU and MPI atomics do not mix on a word).
//
// Errors: shoal::container_full when the owner's block has no free bucket for a new key (the message names the
// rank, the capacity and how to raise it — construct larger or call resize); it is never confused with "already
// present", which insert reports by returning false. shoal::usage_error for a local_insert of a key another rank
// owns, for a fixed<T, N> value larger than N bytes, and for a resize below the number of live entries.
// shoal::heap_exhausted when the symmetric heap cannot hold the buckets (raise SHOAL_HEAP_SIZE).
//
// The destructor is collective over the map's team, as for every container (docs/design.md, "Lifetime"). Ranks in
// owner() and in error messages are ranks of the map's team.
//
// Example:
//   shoal::hash_map<std::uint64_t, double> m(1 << 20);        // collective
//   m.insert(shoal::rank(), 1.5);                              // true: inserted
//   m.insert(shoal::rank(), 2.5);                              // false: already present (value stays 1.5)
//   m.insert_or_assign(shoal::rank(), 2.5);                    // false: assigned
//   shoal::barrier();
//   auto v = m.find(0, shoal::promise::find);                  // std::optional<double>, one get
//   shoal::hash_map<std::string, std::vector<int>> blobs(1000); // variable-length keys and values
//   shoal::hash_map<shoal::fixed<std::string, 31>, int> kmers(1000); // keys inline, up to 31 characters
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/detail/hash_map_slot.hpp"
#include "shoal/containers/detail/hash_map_table.hpp"
#include "shoal/containers/promise.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// Options of a hash_map (every field defaulted).
struct hash_map_options {
  /// Seed of the placement hash; any value, the same on every rank.
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
};

template <class K, class V>
class hash_map : private detail::hash_map_table<K, V> {
  using table = detail::hash_map_table<K, V>;
  using slot = detail::hash_map_slot;
  using typename table::key_storage;
  using typename table::value_storage;
  using typename table::stored_key;
  using typename table::stored_value;
  using typename table::place;
  using table::allocate_parts;
  using table::blobs_;
  using table::capacity_;
  using table::entry_of;
  using table::free_part;
  using table::home_bucket;
  using table::key_of;
  using table::local_count;
  using table::me;
  using table::own_;
  using table::parts_;
  using table::placement;
  using table::probe;
  using table::probe_positions;
  using table::probes_;
  using table::reg_;
  using table::set_parts;
  using table::status_of;
  using table::throw_full;
  using table::value_of;

 public:
  using key_type = typename key_storage::value_type;
  using mapped_type = typename value_storage::value_type;
  using typename table::entry;
  using typename table::bucket;
  using table::uses_blobs;

  /// Collective: a table of `capacity` buckets in total.
  explicit hash_map(std::size_t capacity, hash_map_options opts = {}, const shoal::team& team = shoal::world())
      : table(opts.seed, team) {
    if (capacity == 0) throw usage_error("shoal::hash_map: capacity must be positive");
    allocate_parts(capacity);
  }
  hash_map(hash_map&&) noexcept = default;
  hash_map& operator=(hash_map&&) = delete;
  hash_map(const hash_map&) = delete;
  hash_map& operator=(const hash_map&) = delete;

  std::size_t capacity() const { return capacity_; }
  const shoal::team& team() const noexcept { return reg_.team(); }
  /// The team rank that owns `key` (all its probes go there).
  int owner(const key_type& key) const { return placement(key).rank; }
  /// Buckets examined by this rank's operations since construction (a miss costs its probe length).
  std::uint64_t probe_count() const { return probes_; }

  /// A hint before find(key): where key's home bucket is in memory mapped here (this rank's part, or another rank's
  /// of this host on the shared-memory path), starts loading it into the cache; elsewhere does nothing. Lets a
  /// caller with many independent finds (e.g. many walks in flight) overlap their cache misses.
  void prefetch(const key_type& key) const { shoal::prefetch(home_bucket(placement(key))); }

  /// Inserts (key, value) if key is absent. Returns true when inserted, false when key was already present (the
  /// stored value is unchanged). Throws container_full when the owner's block has no free bucket.
  bool insert(const key_type& key, const mapped_type& value) { return atomic_insert(key, value, false); }

  /// Inserts or replaces. Returns true when inserted, false when an existing value was replaced.
  bool insert_or_assign(const key_type& key, const mapped_type& value) { return atomic_insert(key, value, true); }

  /// The value of key, or nullopt. With p.within(promise::find): one get per probed bucket, no atomics.
  std::optional<mapped_type> find(const key_type& key, concurrency p = promise::any) const {
    return p.within(promise::find) ? find_only(key) : atomic_find(key);
  }

  /// find(keys[i], promise::find) into out[i] for every i (the same promise: only finds until the next barrier), with
  /// the n home buckets read together (shoal::get_many: prefetched where mapped here, otherwise all the reads in
  /// flight at once). A home bucket that does not settle the key (another key, erased) continues with find's probe.
  /// For callers with many independent finds (e.g. many walks in flight); inline keys and values only.
  void find_many(std::span<const key_type> keys, std::span<std::optional<mapped_type>> out) const
    requires(!uses_blobs)
  {
    if (out.size() != keys.size()) {
      throw usage_error("shoal::hash_map::find_many: " + std::to_string(keys.size()) + " keys but " +
                        std::to_string(out.size()) + " results; give out as many elements as keys");
    }
    std::vector<global_ptr<bucket>> home(keys.size());
    std::vector<bucket> read(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) home[i] = home_bucket(placement(keys[i]));
    get_many(std::span<const global_ptr<bucket>>(home), read.data());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      ++probes_;
      const std::uint32_t state = slot::state_of(read[i].status);
      if (state == slot::free_state) {
        out[i].reset();
      } else if (state == slot::ready_state && key_storage::matches(read[i].e.key, key_storage::probe(keys[i]))) {
        out[i].emplace(value_storage::decode(read[i].e.value));
      } else {
        out[i] = find_only(keys[i]);  // another key, erased or being written: probe as find does
      }
    }
  }

  /// Removes key. Returns true when it was present.
  bool erase(const key_type& key) {
    const auto probe_key = key_storage::probe(key);
    bool erased = false;
    probe(placement(key), [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      std::uint32_t seen = atomic_load(st);
      for (;;) {
        switch (slot::state_of(seen)) {
          case slot::free_state: return true;
          case slot::erased_state: return false;
          case slot::reserved_state: seen = slot::wait_until_written(st); continue;
          default: break;
        }
        if (!key_storage::matches(get(key_of(b)), probe_key)) return false;
        seen = slot::acquire_exclusive(st);
        if (seen != slot::reserved_state) {
          if (seen == slot::erased_state) return false;  // erased by someone else; a later copy may live on
          continue;
        }
        const stored_value old = get(value_of(b));
        slot::release_reserved(st, slot::erased_state);
        value_storage::release(old, blobs_.get());
        erased = true;
        return true;
      }
    });
    return erased;
  }

  // ---- this rank's part only (no communication) ------------------------------------------------------------------

  /// Owner only: inserts (key, value) if absent with plain CPU stores into this rank's part (usage_error for a key
  /// another rank owns). Valid only while no other rank touches this rank's part (CPU and MPI atomics do not mix on a
  /// word): e.g. between barriers in an owner-computes phase (hash_map_buffer's flush). Returns as insert.
  bool local_insert(const key_type& key, const mapped_type& value) { return cpu_insert(key, value, false); }

  /// Owner only: insert_or_assign with plain CPU stores, under local_insert's rule.
  bool local_insert_or_assign(const key_type& key, const mapped_type& value) { return cpu_insert(key, value, true); }

  /// A hint before a local_insert of a key this rank owns: starts loading its home bucket into the cache (nothing for
  /// a key of another rank).
  void local_prefetch(const key_type& key) const { prefetch_own(placement(key)); }

  /// Entries in this rank's part (exact when no operation is in flight). Any rank, no communication.
  std::size_t local_size() const {
    std::size_t n = 0;
    const bucket* base = own_;
    for (std::size_t i = 0; i < local_count(me()); ++i) n += slot::state_of(base[i].status) == slot::ready_state;
    return n;
  }

  // ---- collective --------------------------------------------------------------------------------------------------

  /// Collective: entries in the whole table.
  std::size_t size() {
    reclaim();
    return team().allreduce(local_size(), op::sum{});
  }

  /// Collective: returns released blobs of other ranks to their owners (size and resize do it too).
  void reclaim() {
    reg_.check();
    if (blobs_) blobs_->reclaim();
    else team().barrier();
  }

  /// Collective: moves every entry into a new array of `new_capacity` buckets and drops the tombstones. On
  /// container_full (an unlucky block overflows) the old table stays in place on every rank.
  void resize(std::size_t new_capacity) {
    if (new_capacity == 0) throw usage_error("shoal::hash_map::resize: capacity must be positive");
    reg_.check();
    team().barrier();
    std::vector<entry> live;
    std::vector<stored_key> tombstones;
    const bucket* base = own_;
    for (std::size_t i = 0; i < local_count(me()); ++i) {
      const auto state = slot::state_of(base[i].status);
      if (state == slot::ready_state) live.push_back(base[i].e);
      else if (state == slot::erased_state) tombstones.push_back(base[i].e.key);
    }
    const auto total = team().allreduce(live.size(), op::sum{});
    if (total > new_capacity) {
      throw usage_error("shoal::hash_map::resize: " + std::to_string(total) + " entries do not fit in " +
                        std::to_string(new_capacity) + " buckets; choose a larger capacity");
    }
    auto old_parts = std::exchange(parts_, {});
    const auto old_capacity = capacity_;
    const auto old_block = this->block_;
    allocate_parts(new_capacity);
    std::string failure;
    try {
      for (const auto& e : live) place_entry(e);
    } catch (const container_full& err) {
      failure = err.what();
    }
    if (team().allreduce(failure.empty() ? 0 : 1, op::max{}) != 0) {
      team().barrier();
      free_part(parts_);
      set_parts(std::move(old_parts), old_capacity, old_block);
      throw container_full(failure.empty() ? "shoal::hash_map::resize: another rank's block overflowed at capacity " +
                                                 std::to_string(new_capacity) + "; choose a larger capacity"
                                           : failure);
    }
    free_part(old_parts);
    for (const auto& k : tombstones) key_storage::release(k, blobs_.get());
    reclaim();
  }

 private:
  // Replaces the value of a bucket that holds our key. False when the bucket was erased meanwhile.
  bool assign_value(global_ptr<bucket> b, const stored_value& fresh) {
    const auto st = status_of(b);
    if (slot::acquire_exclusive(st) != slot::reserved_state) return false;
    const stored_value old = get(value_of(b));
    put(value_of(b), fresh);
    slot::release_reserved(st, slot::ready_state);
    value_storage::release(old, blobs_.get());
    return true;
  }

  // Fully atomic insert: reserve a free bucket (CAS), put the entry, publish it (fetch_add): CAS + W + A.
  bool atomic_insert(const key_type& key, const mapped_type& value, bool assign) {
    const auto where = placement(key);
    const auto probe_key = key_storage::probe(key);
    // Encoded before any bucket is reserved, so an oversized value never leaves a bucket reserved.
    entry fresh{key_storage::encode(key, blobs_.get()), value_storage::encode(value, blobs_.get())};
    bool inserted = false, value_used = false;
    const bool placed = probe(where, [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      std::uint32_t seen = slot::reserve(st);
      for (;;) {
        switch (slot::state_of(seen)) {
          case slot::free_state:  // reserve() returns free_state only when it reserved the bucket
            put(entry_of(b), fresh);
            slot::release_reserved(st, slot::ready_state);
            inserted = value_used = true;
            return true;
          case slot::reserved_state: seen = slot::wait_until_written(st); continue;
          case slot::erased_state: return false;
          default: break;
        }
        if (!key_storage::matches(get(key_of(b)), probe_key)) return false;
        if (assign) {
          if (!assign_value(b, fresh.value)) return false;
          value_used = true;
        }
        return true;
      }
    });
    if (!inserted) key_storage::release(fresh.key, blobs_.get());
    if (!value_used) value_storage::release(fresh.value, blobs_.get());
    if (!placed) throw_full(where);
    return inserted;
  }

  // Fully atomic find: per probed bucket, enter as a reader (fetch_add), get the entry, leave (fetch_add): 2A + R.
  std::optional<mapped_type> atomic_find(const key_type& key) const {
    const auto probe_key = key_storage::probe(key);
    std::optional<mapped_type> found;
    probe(placement(key), [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      for (;;) {
        const auto state = slot::enter_reader(st);
        if (state != slot::ready_state) {
          if (state == slot::reserved_state) {
            slot::wait_until_written(st);
            continue;
          }
          return state == slot::free_state;
        }
        const entry e = get(entry_of(b));
        const bool match = key_storage::matches(e.key, probe_key);
        if (match) found.emplace(value_storage::decode(e.value));  // a value blob is read while we are inside
        slot::leave_reader(st);
        return match;
      }
    });
    return found;
  }

  std::optional<mapped_type> find_only(const key_type& key) const {
    const auto probe_key = key_storage::probe(key);
    std::optional<mapped_type> found;
    probe(placement(key), [&](global_ptr<bucket> b) {
      for (;;) {
        const bucket whole = get(b);
        switch (slot::state_of(whole.status)) {
          case slot::free_state: return true;
          case slot::erased_state: return false;
          case slot::reserved_state: slot::wait_until_written(status_of(b)); continue;  // only with a broken promise
          default: break;
        }
        if (!key_storage::matches(whole.e.key, probe_key)) return false;
        found.emplace(value_storage::decode(whole.e.value));
        return true;
      }
    });
    return found;
  }

  // hash_map_buffer (a friend) applies its records with placement, prefetch_own and cpu_insert_at: each key placed
  // once for its prefetch and its insert (the buffer keeps the places of the records in between).
  template <class, class>
  friend class hash_map_buffer;

  // A key's home bucket starts loading into the cache, when it is in this rank's part.
  void prefetch_own(const place& where) const {
    if (static_cast<std::size_t>(where.rank) == me()) __builtin_prefetch(own_ + where.home, 1);
  }

  // local_insert / local_insert_or_assign: plain loads and stores into this rank's part, the key placed at `where`.
  bool cpu_insert(const key_type& key, const mapped_type& value, bool assign) {
    return cpu_insert_at(placement(key), key, value, assign);
  }
  bool cpu_insert_at(const place& where, const key_type& key, const mapped_type& value, bool assign) {
    if (static_cast<std::size_t>(where.rank) != me()) [[unlikely]] throw_not_owner(where, assign);
    const auto probe_key = key_storage::probe(key);
    bool inserted = false;
    const bool placed = probe_positions(where, [&](std::size_t pos) {
      bucket& b = own_[pos];
      switch (slot::state_of(b.status)) {
        case slot::free_state:
          b.e.key = key_storage::encode(key, blobs_.get());
          b.e.value = value_storage::encode(value, blobs_.get());
          b.status = slot::ready_state;
          inserted = true;
          return true;
        case slot::ready_state:
          if (!key_storage::matches(b.e.key, probe_key)) return false;
          if (assign) {
            const auto fresh = value_storage::encode(value, blobs_.get());
            value_storage::release(std::exchange(b.e.value, fresh), blobs_.get());
          }
          return true;
        default: return false;
      }
    });
    if (!placed) throw_full(where);
    return inserted;
  }

  // Out of line, so that the error's message adds nothing to cpu_insert's frame.
  [[noreturn, gnu::noinline, gnu::cold]] void throw_not_owner(const place& where, bool assign) const {
    throw usage_error(std::string("shoal::hash_map::") + (assign ? "local_insert_or_assign" : "local_insert") +
                      " on rank " + std::to_string(me()) + " of a key owned by rank " + std::to_string(where.rank) +
                      "; use owner(key) to route it, insert (any rank), or hash_map_buffer");
  }

  // resize: puts an entry whose key is known to be unique into the first free bucket of its sequence.
  void place_entry(const entry& e) {
    const auto where = placement(key_storage::decode(e.key));
    const bool placed = probe(where, [&](global_ptr<bucket> b) {
      if (slot::reserve(status_of(b)) != slot::free_state) return false;
      put(entry_of(b), e);
      slot::release_reserved(status_of(b), slot::ready_state);
      return true;
    });
    if (!placed) throw_full(where);
  }
};

}  // namespace shoal
