// shoal/containers/hash_map.hpp — a distributed hash table on one-sided operations (BCL §5.2).
//
// Model: one-sided (RDMA), distributed. One logical array of `capacity` buckets, block-distributed over the ranks
// (rank r holds buckets [r*B, (r+1)*B), B = ceil(capacity / ranks)). XXH3 of the key (shoal::hash_value) picks a
// home bucket; collisions are resolved by open addressing with quadratic (triangular) probing that stays inside the
// home bucket's block, so every operation on a key talks to one rank — its owner — and the owner can insert with
// plain CPU instructions (promise::local, used by hash_map_buffer). Triangular probing over the next power of two
// visits every bucket of the block exactly once, so "no free bucket" really means the block is full.
//
// Each bucket is {32-bit status, key, value}. Status bits 0-1: free 0, reserved 1, ready 2, erased 3 (a tombstone);
// bits 2-31 count the fully atomic readers inside a ready bucket. (BCL sets one of 30 random read bits instead; two
// readers that draw the same bit let a writer in while one of them still reads, so shoal counts readers.) Every
// change of a status word is a compare_exchange (reads use atomic_load): MPI's default accumulate_ops hint
// (same_op_no_op) lets an implementation assume that concurrent atomics on one word use one operation — MPICH relies
// on it, and mixing fetch_add, XOR and CAS on a word loses updates there. Each CAS guesses the common value (a
// reader enters "ready, no reader" and leaves "ready, one reader"), so the common case costs what fetch_add / XOR
// would. Keys and values are stored as described in containers/storage.hpp: trivially
// copyable types inline, shoal::fixed<T, N> inline serialized, other types (std::string, std::vector, cereal types)
// as blobs.
//
// Operations. Who: collective = every rank of the map's team, in the same order; any rank = one rank's call, no
// other rank takes part; owner only = only the rank that owns the key may call it. Costs per probed bucket, best
// case is one probe; A remote atomic, R remote read, W remote write (+ flush), B barrier; a blob key or value adds
// one R when it is read:
//   hash_map(capacity, opts = {}, team = world())
//                                         collective  allocate and clear on the team's ranks            B
//   ~hash_map                             collective  then each rank frees its part and blobs (no-op after
//                                                     finalize)                                          B
//   insert(k, v)                          any rank    CAS free->reserved, put key and value, CAS ->ready
//                                                     2A + W; on a ready bucket of another key: A + R, next
//   insert(k, v, promise::local)          owner only  plain CPU stores (usage_error on another rank)   local
//   insert_or_assign(k, v [, local])      any rank    as insert; an existing key: R + 2A (exclusive CAS, CAS) + W
//                                         (owner only with promise::local)
//   find(k)                               any rank    CAS reader in, get entry, CAS reader out         2A + R
//                                                     (a free or erased bucket: A)
//   find(k, promise::find)                any rank    one get of the whole bucket                      R
//   prefetch(k)                           any rank    a hint before find: loads k's home bucket into the cache
//                                                     where it is mapped here (own part, same-host shm)  local
//   find_many(keys, out)                  any rank    find(k, promise::find) of n keys, their home buckets read
//                                                     together: prefetched where mapped here, the gets in flight
//                                                     at once elsewhere (one wait for all); a home bucket of
//                                                     another key goes on probing as find does. Inline keys and
//                                                     values only (no blobs)                            n R, overlapped
//   erase(k)                              any rank    load, get key, CAS ready->reserved, get value, CAS ->erased
//                                                     3A + 2R
//   owner(k), capacity(), probe_count()   any rank    arithmetic / this rank's counter                 -
//   local_prefetch(k)                     any rank    a cache hint before a local insert; nothing off the owner
//   size()                                collective  entries in the whole table                      B + local scan
//   local_size()                          any rank    entries in the calling rank's part               local scan
//   resize(new_capacity)                  collective  rehash every live entry into a new array        2B + n(2A + W)
//   reclaim()                             collective  return released blobs of other ranks to them    B
// A miss stops at the first free bucket of the probe sequence: its cost is the probe length, never the table
// (BCL's find scans the whole table on a miss). Erased buckets are skipped by find and are not reused by insert;
// resize() drops them.
//
// Concurrency promises (promise.hpp): the default, promise::any, is fully atomic — insert, insert_or_assign, find
// and erase may all run at once on any keys. find(k, p) with p.within(promise::find) (only finds until the next
// barrier) reads each probed bucket with one get and no atomics. insert / insert_or_assign with promise::local are
// valid only while no other rank touches this rank's part (CPU and MPI atomics do not mix on a word).
//
// Errors: shoal::container_full when the owner's block has no free bucket for a new key (the message names the
// rank, the capacity and how to raise it — construct larger or call resize); it is never confused with "already
// present", which insert reports by returning false. shoal::usage_error for a local insert of a key another rank
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
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/detail/stored.hpp"
#include "shoal/containers/storage.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/containers/promise.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// Options of a hash_map (every field defaulted).
struct hash_map_options {
  /// Seed of the placement hash; any value, the same on every rank.
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
};

template <class K, class V>
class hash_map {
  using key_storage = detail::storage_t<K>;
  using value_storage = detail::storage_t<V>;
  using stored_key = typename key_storage::stored_type;
  using stored_value = typename value_storage::stored_type;

 public:
  using key_type = typename key_storage::value_type;
  using mapped_type = typename value_storage::value_type;
  static constexpr bool uses_blobs = key_storage::uses_blobs || value_storage::uses_blobs;

  struct entry {
    stored_key key;
    stored_value value;
  };
  struct bucket {
    std::uint32_t status;
    entry e;
  };
  static_assert(std::is_trivially_copyable_v<bucket>);

  /// Collective: a table of `capacity` buckets in total.
  explicit hash_map(std::size_t capacity, hash_map_options opts = {}, const shoal::team& team = shoal::world())
      : seed_(opts.seed), reg_(team, "shoal::hash_map") {
    if (capacity == 0) throw usage_error("shoal::hash_map: capacity must be positive");
    if (uses_blobs) blobs_ = std::make_unique<detail::blob_heap>(team);
    allocate_parts(capacity);
  }
  hash_map(hash_map&& o) noexcept
      : seed_(o.seed_), capacity_(o.capacity_), block_(o.block_), parts_(std::exchange(o.parts_, {})),
        blobs_(std::move(o.blobs_)), probes_(o.probes_), reg_(std::move(o.reg_)) {}
  hash_map& operator=(hash_map&&) = delete;
  hash_map(const hash_map&) = delete;
  hash_map& operator=(const hash_map&) = delete;

  std::size_t capacity() const { return capacity_; }
  const shoal::team& team() const noexcept { return reg_.team(); }
  /// The team rank that owns `key` (all its probes go there).
  int owner(const key_type& key) const { return placement(hash_value(key, seed_)).rank; }
  /// Buckets examined by this rank's operations since construction (a miss costs its probe length).
  std::uint64_t probe_count() const { return probes_; }

  /// A hint before a promise::local insert of a key this rank owns: starts loading its home bucket into the cache.
  void local_prefetch(const key_type& key) const {
    const auto where = placement(hash_value(key, seed_));
    if (static_cast<std::size_t>(where.rank) == me()) __builtin_prefetch(parts_[me()].local() + where.home, 1);
  }

  /// A hint before find(key): where key's home bucket is in memory mapped here (this rank's part, or another rank's
  /// of this host on the shared-memory path), starts loading it into the cache; elsewhere does nothing. Lets a
  /// caller with many independent finds (e.g. many walks in flight) overlap their cache misses.
  void prefetch(const key_type& key) const {
    const auto where = placement(hash_value(key, seed_));
    shoal::prefetch(parts_[static_cast<std::size_t>(where.rank)] + static_cast<std::ptrdiff_t>(where.home));
  }

  /// Inserts (key, value) if key is absent. Returns true when inserted, false when key was already present (the
  /// stored value is unchanged). Throws container_full when the owner's block has no free bucket.
  bool insert(const key_type& key, const mapped_type& value, concurrency p = promise::any) {
    return p.within(promise::local) ? local_insert(key, value, false) : atomic_insert(key, value, false);
  }

  /// Inserts or replaces. Returns true when inserted, false when an existing value was replaced.
  bool insert_or_assign(const key_type& key, const mapped_type& value, concurrency p = promise::any) {
    return p.within(promise::local) ? local_insert(key, value, true) : atomic_insert(key, value, true);
  }

  /// The value of key, or nullopt. With p.within(promise::find): one get per probed bucket, no atomics.
  std::optional<mapped_type> find(const key_type& key, concurrency p = promise::any) const {
    return p.within(promise::find) ? find_only(key) : atomic_find(key);
  }

  /// find(keys[i], promise::find) into out[i] for every i (the same promise: only finds until the next barrier), with
  /// the n home buckets read together: where a bucket is mapped here (this rank's part, or on shared memory a peer's)
  /// all are prefetched before any is read; elsewhere all the gets are started before the first is waited for, so
  /// the n latencies overlap. A home bucket that does not settle the key (another key, erased) continues with find's
  /// probe. For callers with many independent finds (e.g. many walks in flight); inline keys and values only.
  void find_many(std::span<const key_type> keys, std::span<std::optional<mapped_type>> out) const
    requires(!uses_blobs)
  {
    if (out.size() != keys.size()) {
      throw usage_error("shoal::hash_map::find_many: " + std::to_string(keys.size()) + " keys but " +
                        std::to_string(out.size()) + " results; give out as many elements as keys");
    }
    std::vector<global_ptr<bucket>> home(keys.size());
    std::vector<bucket> read(keys.size());
    std::vector<future<void>> pending(keys.size());
    auto& rt = detail::rt();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto where = placement(hash_value(keys[i], seed_));
      home[i] = parts_[static_cast<std::size_t>(where.rank)] + static_cast<std::ptrdiff_t>(where.home);
      if (detail::mapped(rt, home[i].rank(), home[i].offset()) != nullptr) shoal::prefetch(home[i]);
      else pending[i] = async_get(home[i], &read[i], 1);
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (pending[i].valid()) pending[i].get();
      else read[i] = get(home[i]);
      ++probes_;
      const std::uint32_t state = read[i].status & state_mask;
      if (state == free_state) {
        out[i].reset();
      } else if (state == ready_state && key_storage::matches(read[i].e.key, key_storage::probe(keys[i]))) {
        out[i].emplace(value_storage::decode(read[i].e.value));
      } else {
        out[i] = find_only(keys[i]);  // another key, erased or being written: probe as find does
      }
    }
  }

  /// Removes key. Returns true when it was present.
  bool erase(const key_type& key) {
    const auto where = placement(hash_value(key, seed_));
    const auto probe_key = key_storage::probe(key);
    bool erased = false;
    probe(where, [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      std::uint32_t seen = atomic_load(st);
      for (;;) {
        switch (seen & state_mask) {
          case free_state: return true;
          case erased_state: return false;
          case reserved_state: seen = wait_until_written(st); continue;
          default: break;
        }
        if (!key_storage::matches(get(key_of(b)), probe_key)) return false;
        seen = acquire_exclusive(st);
        if ((seen & state_mask) != reserved_state) {
          if ((seen & state_mask) == erased_state) return false;  // erased by someone else; a later copy may live on
          continue;
        }
        const stored_value old = get(value_of(b));
        set_state(st, reserved_state, erased_state);
        value_storage::release(old, blobs_.get());
        erased = true;
        return true;
      }
    });
    return erased;
  }

  /// Entries in this rank's part (exact when no operation is in flight). Any rank, no communication.
  std::size_t local_size() const {
    std::size_t n = 0;
    const bucket* base = parts_[me()].local();
    for (std::size_t i = 0; i < local_count(me()); ++i) n += (base[i].status & state_mask) == ready_state;
    return n;
  }

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
    const bucket* base = parts_[me()].local();
    for (std::size_t i = 0; i < local_count(me()); ++i) {
      const auto state = base[i].status & state_mask;
      if (state == ready_state) live.push_back(base[i].e);
      else if (state == erased_state) tombstones.push_back(base[i].e.key);
    }
    const auto total = team().allreduce(live.size(), op::sum{});
    if (total > new_capacity) {
      throw usage_error("shoal::hash_map::resize: " + std::to_string(total) + " entries do not fit in " +
                        std::to_string(new_capacity) + " buckets; choose a larger capacity");
    }
    auto old_parts = std::exchange(parts_, {});
    const auto old_capacity = capacity_;
    const auto old_block = block_;
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
      parts_ = std::move(old_parts);
      capacity_ = old_capacity;
      block_ = old_block;
      throw container_full(failure.empty() ? "shoal::hash_map::resize: another rank's block overflowed at capacity " +
                                                 std::to_string(new_capacity) + "; choose a larger capacity"
                                           : failure);
    }
    free_part(old_parts);
    for (const auto& k : tombstones) key_storage::release(k, blobs_.get());
    reclaim();
  }

 private:
  static constexpr std::uint32_t free_state = 0, reserved_state = 1, ready_state = 2, erased_state = 3;
  static constexpr std::uint32_t state_mask = 3;
  static constexpr std::uint32_t one_reader = 4;

  struct place {
    int rank;
    std::size_t home;
    std::size_t count;
  };

  std::size_t me() const { return static_cast<std::size_t>(reg_.rank()); }

  void allocate_parts(std::size_t capacity) {
    const auto p = static_cast<std::size_t>(team().size());
    capacity_ = capacity;
    block_ = (capacity + p - 1) / p;
    parts_ = reg_.allocate_collective<bucket>(block_);
    std::memset(static_cast<void*>(parts_[me()].local()), 0, block_ * sizeof(bucket));
    team().barrier();
  }
  void free_part(std::vector<global_ptr<bucket>>& parts) {
    if (!parts.empty()) reg_.deallocate(parts[me()]);
    parts.clear();
  }

  std::size_t local_count(std::size_t r) const {
    const std::size_t start = r * block_;
    return start >= capacity_ ? 0 : std::min(block_, capacity_ - start);
  }

  place placement(std::uint64_t h) const {
    reg_.check();
    const auto slot = static_cast<std::uint64_t>((static_cast<unsigned __int128>(h) * capacity_) >> 64);
    const auto r = static_cast<std::size_t>(slot / block_);
    return place{static_cast<int>(r), static_cast<std::size_t>(slot - r * block_), local_count(r)};
  }

  // Calls visit(bucket) along the probe sequence until it returns true; false when every bucket was visited.
  template <class Visit>
  bool probe(const place& where, Visit&& visit) const {
    const std::uint64_t span = std::bit_ceil(static_cast<std::uint64_t>(where.count));
    const std::uint64_t mask = span - 1;
    std::uint64_t pos = where.home;
    const auto part = parts_[static_cast<std::size_t>(where.rank)];
    for (std::uint64_t i = 0; i < span; ++i) {
      pos = (pos + i) & mask;  // home + i(i+1)/2: a permutation of [0, span)
      if (pos >= where.count) continue;
      ++probes_;
      if (visit(part + static_cast<std::ptrdiff_t>(pos))) return true;
    }
    return false;
  }

  static global_ptr<std::uint32_t> status_of(global_ptr<bucket> b) { return b.template reinterpret<std::uint32_t>(); }
  static global_ptr<entry> entry_of(global_ptr<bucket> b) {
    return (b.template reinterpret<std::byte>() + static_cast<std::ptrdiff_t>(offsetof(bucket, e)))
        .template reinterpret<entry>();
  }
  static global_ptr<stored_key> key_of(global_ptr<bucket> b) {
    return (entry_of(b).template reinterpret<std::byte>() + static_cast<std::ptrdiff_t>(offsetof(entry, key)))
        .template reinterpret<stored_key>();
  }
  static global_ptr<stored_value> value_of(global_ptr<bucket> b) {
    return (entry_of(b).template reinterpret<std::byte>() + static_cast<std::ptrdiff_t>(offsetof(entry, value)))
        .template reinterpret<stored_value>();
  }

  // Waits (making progress) while a writer holds the bucket; returns the status it then sees.
  static std::uint32_t wait_until_written(global_ptr<std::uint32_t> st) {
    std::uint32_t seen = 0;
    wait_until([&] {
      seen = atomic_load(st);
      return (seen & state_mask) != reserved_state;
    });
    return seen;
  }

  // Replaces the state bits `from` by `to`, keeping any reader count (one CAS when the guess holds).
  static void set_state(global_ptr<std::uint32_t> st, std::uint32_t from, std::uint32_t to) {
    std::uint32_t guess = from;
    for (;;) {
      const auto seen = compare_exchange(st, guess, (guess & ~state_mask) | to);
      if (seen == guess) return;
      guess = seen;
    }
  }

  // Counts a reader into a ready bucket. Returns ready_state once inside, else the state that kept it out.
  static std::uint32_t enter_reader(global_ptr<std::uint32_t> st) {
    std::uint32_t guess = ready_state;
    for (;;) {
      const auto seen = compare_exchange(st, guess, guess + one_reader);
      if (seen == guess) return ready_state;
      if ((seen & state_mask) != ready_state) return seen & state_mask;
      guess = seen;
    }
  }

  static void leave_reader(global_ptr<std::uint32_t> st) {
    std::uint32_t guess = ready_state + one_reader;
    for (;;) {
      const auto seen = compare_exchange(st, guess, guess - one_reader);
      if (seen == guess) return;
      guess = seen;
    }
  }

  // Takes a ready bucket exclusively (ready with no reader -> reserved). Returns reserved_state on success, else
  // the status of a bucket that stopped being ready.
  static std::uint32_t acquire_exclusive(global_ptr<std::uint32_t> st) {
    std::uint32_t outcome = reserved_state;
    wait_until([&] {
      const auto seen = compare_exchange(st, ready_state, reserved_state);
      if (seen == ready_state) return true;
      if ((seen & state_mask) == reserved_state) {
        wait_until_written(st);
        return false;
      }
      if ((seen & state_mask) == ready_state) return false;  // readers inside: wait for them to leave
      outcome = seen;
      return true;
    });
    return outcome;
  }

  [[noreturn]] void throw_full(const place& where) const {
    throw container_full("shoal::hash_map: no free bucket for a new key in rank " + std::to_string(where.rank) +
                         "'s part (" + std::to_string(where.count) + " buckets of a total capacity of " +
                         std::to_string(capacity_) +
                         "); the table is full (erased buckets are reused only after resize): construct it with a "
                         "larger capacity or call resize(new_capacity) (collective)");
  }

  // Replaces the value of a bucket that holds our key. False when the bucket was erased meanwhile.
  bool assign_value(global_ptr<bucket> b, const stored_value& fresh) {
    const auto st = status_of(b);
    if (acquire_exclusive(st) != reserved_state) return false;
    const stored_value old = get(value_of(b));
    put(value_of(b), fresh);
    set_state(st, reserved_state, ready_state);
    value_storage::release(old, blobs_.get());
    return true;
  }

  bool atomic_insert(const key_type& key, const mapped_type& value, bool assign) {
    const auto where = placement(hash_value(key, seed_));
    const auto probe_key = key_storage::probe(key);
    // Encoded before any bucket is reserved, so an oversized value never leaves a bucket reserved.
    entry fresh{key_storage::encode(key, blobs_.get()), value_storage::encode(value, blobs_.get())};
    bool inserted = false, value_used = false;
    const bool placed = probe(where, [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      std::uint32_t seen = compare_exchange(st, free_state, reserved_state);
      for (;;) {
        switch (seen & state_mask) {
          case free_state:  // readers never enter a free bucket, so this CAS reserved it
            put(entry_of(b), fresh);
            set_state(st, reserved_state, ready_state);
            inserted = value_used = true;
            return true;
          case reserved_state: seen = wait_until_written(st); continue;
          case erased_state: return false;
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

  std::optional<mapped_type> atomic_find(const key_type& key) const {
    const auto where = placement(hash_value(key, seed_));
    const auto probe_key = key_storage::probe(key);
    std::optional<mapped_type> found;
    probe(where, [&](global_ptr<bucket> b) {
      const auto st = status_of(b);
      for (;;) {
        const auto state = enter_reader(st);
        if (state != ready_state) {
          if (state == reserved_state) {
            wait_until_written(st);
            continue;
          }
          return state == free_state;
        }
        const entry e = get(entry_of(b));
        const bool match = key_storage::matches(e.key, probe_key);
        if (match) found.emplace(value_storage::decode(e.value));  // a value blob is read while we are inside
        leave_reader(st);
        return match;
      }
    });
    return found;
  }

  std::optional<mapped_type> find_only(const key_type& key) const {
    const auto where = placement(hash_value(key, seed_));
    const auto probe_key = key_storage::probe(key);
    std::optional<mapped_type> found;
    probe(where, [&](global_ptr<bucket> b) {
      for (;;) {
        const bucket whole = get(b);
        switch (whole.status & state_mask) {
          case free_state: return true;
          case erased_state: return false;
          case reserved_state: wait_until_written(status_of(b)); continue;  // only with a broken promise
          default: break;
        }
        if (!key_storage::matches(whole.e.key, probe_key)) return false;
        found.emplace(value_storage::decode(whole.e.value));
        return true;
      }
    });
    return found;
  }

  bool local_insert(const key_type& key, const mapped_type& value, bool assign) {
    const auto where = placement(hash_value(key, seed_));
    if (static_cast<std::size_t>(where.rank) != me()) {
      throw usage_error("shoal::hash_map: insert with promise::local on rank " + std::to_string(me()) +
                        " of a key owned by rank " + std::to_string(where.rank) +
                        "; use owner(key) to route it, or hash_map_buffer");
    }
    const auto probe_key = key_storage::probe(key);
    bool inserted = false;
    const bool placed = probe(where, [&](global_ptr<bucket> gb) {
      bucket& b = *gb.local();
      switch (b.status & state_mask) {
        case free_state:
          b.e.key = key_storage::encode(key, blobs_.get());
          b.e.value = value_storage::encode(value, blobs_.get());
          b.status = ready_state;
          inserted = true;
          return true;
        case ready_state:
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

  // resize: puts an entry whose key is known to be unique into the first free bucket of its sequence.
  void place_entry(const entry& e) {
    const auto where = placement(hash_value(key_storage::decode(e.key), seed_));
    const bool placed = probe(where, [&](global_ptr<bucket> b) {
      if (compare_exchange(status_of(b), free_state, reserved_state) != free_state) return false;
      put(entry_of(b), e);
      set_state(status_of(b), reserved_state, ready_state);
      return true;
    });
    if (!placed) throw_full(where);
  }

  std::uint64_t seed_;
  std::size_t capacity_ = 0;
  std::size_t block_ = 0;
  std::vector<global_ptr<bucket>> parts_;
  std::unique_ptr<detail::blob_heap> blobs_;
  mutable std::uint64_t probes_ = 0;
  // Declared last, destroyed first: the team's barrier, then this rank's part; then blobs_ frees its blobs.
  registration reg_;
};

}  // namespace shoal
