// shoal/containers/ordered_map.hpp — a distributed ordered dictionary: the service-oriented skip list of Alam,
// Kamal and Wagner (seeds/000), on shoal's active messages.
//
// Model: owner computes (active messages), distributed. The skip-list nodes are active objects owned by ranks, many
// per rank. Each node holds up to G sorted key-values and a tower that stores, per level, the next node and that
// node's min key. An operation is a request message that enters at the head (rank 0) or at a shortcut and is
// forwarded forward-only from node to node; the node that reaches the answer replies to the client directly (under
// total order every operation passes the head's rank first, which orders them and relays the answer). Every request
// is handled atomically by the node it reaches (one handler on the owning rank).
//
// Operations (blocking forms wait, making progress; async_ forms return a future). Who: collective = every rank of
// the map's team, in the same order; any rank = one rank's call (other ranks' nodes answer inside their progress):
//   ordered_map(opts = {}, team = world())  collective  the nodes live on the team's ranks
//   ~ordered_map()                     collective  wait, quiescence of the team's messages, B; no-op after finalize
//   find(k) -> optional<V>, contains(k) -> bool
//                                      any rank
//   insert(k, v) -> bool               any rank    false: k present (its value is left unchanged)
//   erase(k) -> bool                   any rank    false: k absent
//   lower_bound(k) / successor(k) -> optional<pair<K,V>>
//                                      any rank    first key >= k / > k
//   range(lo, hi) -> vector<pair<K,V>> any rank    ordered, inclusive; every node holding part of it answers
//   range("4.[2,8].3.[1,3]") / range(key_box)
//                                      any rank    tuple/array-of-integer keys: per-dimension values and intervals
//   async_<op>(...) -> future<...>     any rank    the same, non-blocking (async_operation: any raw operation)
//   wait()                             any rank    this rank's operations all complete
//   barrier()                          collective  every rank's operations complete, no message in flight
//   size()                             collective  key-values in the whole map (after a quiescence barrier)
//   local_size(), local_nodes()        any rank    key-values / nodes stored on this rank
//   set_consistency(c) / set_asynchrony(k)
//                                      collective  change the semantics / k between quiescent points
//   window(), options(), stats()       any rank    this rank's window (the head's rank under total order: the
//                                                  sequencer's), the options, its counters
//   local_add_shortcut(min, node, h)   any rank    tests only: a (possibly stale) shortcut on this rank's board
//
// Costs, for n key-values in N = n/G' nodes (G' the mean fill, G/2..G) with tower probability p:
//   find / insert / erase                  M = hops + 1 reply, hops = O(log_{1/p} N) expected from the head (fewer
//                                          from a shortcut); each hop to a node of another rank is one message,
//                                          a hop between nodes of one rank is a function call
//   lower_bound / successor                as find; a pass that probes: + 2 messages (probe, its reply) per node
//                                          where it descends, to the closest node it descends in front of (at most
//                                          the list's height). The first pass probes only under sequential
//                                          consistency when it enters at the head. When the key's node holds no
//                                          key past k (about 1 in G'), the second pass is + 2 messages: a probe of
//                                          that node's next node and its reply (that node's first key, while its
//                                          min key is unchanged); only if it cannot answer, a pass from the head
//                                          with probes. About 1 remote message in all at 10^6 keys, 2 ranks.
//                                          Under sequential consistency one that has a shortcut is capped by the
//                                          next shortcut's min key: later reads above the cap, and plain searches
//                                          at its own shortcut, overtake it (so lower_bounds of one rank overlap),
//                                          later writes above its key wait; when its key's node holds nothing below
//                                          the cap, its second pass waits for earlier reads it could overtake, and
//                                          later reads that may share a key with it run again from its key up
//                                          (stats().reads_run_again)
//   every (k+1)-th forward of a node to another rank: + 1 arrival message; the node holds requests meanwhile (k =
//                                          ordered_map_options::asynchrony, set_asynchrony)
//   insert that splits a node              + 1 allocation round trip when the free node is on another rank;
//                                          taller tower (Figure 6c): + one SPLIT request from the client, O(log N)
//   erase of a node's min key (Figure 7b)  + 2 messages per level of the node (marker, release)
//   erase that leaves < max(2, G/4) keys   the node merges into its predecessor: + a node removal from the head
//                                          (O(log N) hops, + 2 per level of the node) + 1 message with its keys
//   range returning r key-values           M = O(log N) + 2 * (parts), parts = nodes holding part of the range
//   total order                            + 2 messages (to the head's rank, the answer back from it) when the
//                                          client is not on rank 0; the head's rank enters the operation at one of
//                                          its own shortcuts where the order allows (as sequential consistency does
//                                          for one client), so hops are as from a shortcut. That rank does the
//                                          ordering for every rank: total order scales with it alone
//   R = W = A = 0 (no one-sided operation);  B = 0 except size() and the destructor (one quiescence barrier each).
//
// Concurrency promises: every operation may run concurrently with every other one (promise::any, the only mode).
// Consistency (ordered_map_options::semantics, paper §1.3):
//   total_order   every request goes to the head's rank (rank 0), which numbers them in arrival order (the head
//                 stamp) and issues them as the list's only client under sequential consistency: operations take
//                 effect in that order (results equal a sequential replay in it; linearizable).
//   sequential    (default) a rank enters at shortcuts of its own rank's bulletin board only where none of its
//                 earlier operations still on the way could be overtaken (finds and lower_bounds entering at one
//                 shortcut keep their order and do not wait for each other; a read at a shortcut does not wait for a
//                 lower_bound from the head either: it is held behind it, and runs again if that one read its keys
//                 later); its operations take effect and its futures become ready in issue order. Per key the results
//                 are linearizable in every rank's issue order. A range or lower_bound reads its nodes at different
//                 moments: it may see rank A's later write to one node and not A's earlier write to another (which A
//                 sent through the head while this read came through a shortcut); total_order rules that out.
//   none          shortcuts everywhere, for clients and for nodes (reads jump ahead): no order between operations.
//   Whatever the semantics, each operation is atomic and correct; a stale shortcut fails over to the head.
//
// Errors: shoal::container_full from an insert when every rank's nodes are in use (raise nodes_per_rank or
// granularity in ordered_map_options); shoal::usage_error for options out of range (the constructor runs
// ordered_map_options::validate(), which names the field) and for a malformed range text.
//
// Types: ordered_map_options and consistency (ordered_map_options.hpp), key_box (key_box.hpp), the low-level
// operation / operation_result and stats() counters (ordered_map_operation.hpp).
//
// Example:
//   shoal::ordered_map<long, double> m;                         // collective
//   m.insert(shoal::rank() * 1000 + 7, 1.5);
//   m.wait();
//   shoal::barrier();
//   auto v = m.find(7);                                        // std::optional<double>
//   auto items = m.range(0, 5000);                             // every key in [0, 5000], ordered
//   auto next = m.successor(7);                                // first key > 7
//   shoal::ordered_map<std::tuple<int, int, int>, int> grid;
//   auto box = grid.range("4.[2,8].[1,3]");
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/am.hpp"
#include "shoal/am/team_scope.hpp"
#include "shoal/containers/detail/ordered_map/service.hpp"
#include "shoal/containers/key_box.hpp"
#include "shoal/containers/ordered_map_operation.hpp"
#include "shoal/containers/ordered_map_options.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

namespace detail::ordered_map {

using deliver_function = std::function<void(std::span<const std::byte>)>;

/// Messages name their map by its handler slot (shoal::registration).
inline void deliver_to(std::uint32_t instance, std::span<const std::byte> bytes) {
  if (auto* deliver = static_cast<deliver_function*>(shoal::handler_target(instance))) (*deliver)(bytes);
}

/// A message of the map: its bytes as they arrived in the active-message layer's receive buffer, handed to the map
/// named by `instance` (its handler slot, shoal::registration) without a copy.
inline void on_message(std::uint32_t instance, std::span<const std::byte> bytes) { deliver_to(instance, bytes); }

/// Sends one message of map `instance` to world rank `dst`: its bytes are copied once, into the destination's buffer.
inline void send_message(int dst, std::uint32_t instance, std::span<const std::byte> bytes) {
  shoal::am::detail::post_bytes(dst, &on_message, instance, bytes);
}

/// Room for a message of `n` bytes of map `instance` to world rank `dst`, written there before any other shoal call.
inline std::byte* reserve_message(int dst, std::uint32_t instance, std::size_t n) {
  return shoal::am::detail::reserve_bytes(dst, &on_message, instance, n);
}

}  // namespace detail::ordered_map

template <class K, class V>
  requires std::totally_ordered<K> && serializable<K> && serializable<V> && std::default_initializable<K> &&
           std::default_initializable<V>
class ordered_map {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using operation = ordered_map_operation<K, V>;
  using operation_result = ordered_map_operation_result<K, V>;

  /// Collective over `team`: the map's nodes live on the team's ranks; its messages carry the team's id, so its
  /// quiescence barriers (barrier(), size(), the destructor) wait for the team's messages among its ranks only.
  explicit ordered_map(const ordered_map_options& opts = {}, const shoal::team& team = shoal::world())
      : reg_(team, "shoal::ordered_map"), opts_(opts) {
    opts.validate();
    deliver_ = [this](std::span<const std::byte> bytes) { service_->deliver(bytes); };
    reg_.register_target(&deliver_);
    id_ = reg_.slot();
    detail::ordered_map::transport net;
    net.rank = team.rank();
    net.ranks = team.size();
    const std::uint32_t id = id_;
    net.send = [id, team](int dst, std::span<const std::byte> bytes) {  // dst: a team rank
      shoal::am::team_scope scope(team);
      detail::ordered_map::send_message(team.to_world(dst), id, bytes);
    };
    net.flush = [] { shoal::am::flush(); };
    net.reserve = [id, team](int dst, std::size_t n) {
      shoal::am::team_scope scope(team);
      return detail::ordered_map::reserve_message(team.to_world(dst), id, n);
    };
    service_ = std::make_unique<service_type>(opts, std::move(net));
    team.barrier();
  }

  ordered_map(const ordered_map&) = delete;
  ordered_map& operator=(const ordered_map&) = delete;

  /// Collective: waits for this rank's operations, then for every message everywhere; then reg_ frees the handler
  /// slot. Nothing after the environment has ended (docs/design.md, "Lifetime").
  ~ordered_map() {
    if (!reg_.live()) return;
    try {
      wait();
      shoal::am::barrier(team());
    } catch (...) {
    }
    reg_.release();  // before the service is destroyed
  }

  // ---- operations ------------------------------------------------------------------------------------------------

  future<std::optional<V>> async_find(const K& key) {
    return submit<std::optional<V>>({op_kind::find, key, {}, {}, {}}, [](operation_result&& r) { return std::move(r.value); });
  }
  std::optional<V> find(const K& key) { return async_find(key).get(); }
  bool contains(const K& key) { return find(key).has_value(); }

  /// True when inserted, false when the key was present (its value is left unchanged).
  future<bool> async_insert(const K& key, const V& value) {
    return submit<bool>({op_kind::insert, key, {}, value, {}},
                        [](operation_result&& r) { return r.st == ordered_map_status::ok; });
  }
  bool insert(const K& key, const V& value) { return async_insert(key, value).get(); }

  /// True when the key was present.
  future<bool> async_erase(const K& key) {
    return submit<bool>({op_kind::erase, key, {}, {}, {}},
                        [](operation_result&& r) { return r.st == ordered_map_status::ok; });
  }
  bool erase(const K& key) { return async_erase(key).get(); }

  /// The first key-value with key >= `key`.
  future<std::optional<value_type>> async_lower_bound(const K& key) { return neighbour(op_kind::lower_bound, key); }
  std::optional<value_type> lower_bound(const K& key) { return async_lower_bound(key).get(); }
  /// The first key-value with key > `key` (upper_bound).
  future<std::optional<value_type>> async_successor(const K& key) { return neighbour(op_kind::successor, key); }
  std::optional<value_type> successor(const K& key) { return async_successor(key).get(); }

  /// Every key-value with lo <= key <= hi, in key order.
  future<std::vector<value_type>> async_range(const K& lo, const K& hi) {
    if (hi < lo) return make_ready_future(std::vector<value_type>{});
    return submit<std::vector<value_type>>({op_kind::range, lo, hi, {}, {}}, &to_pairs);
  }
  std::vector<value_type> range(const K& lo, const K& hi) { return async_range(lo, hi).get(); }

  /// Keys inside a box of per-dimension values and intervals (tuple or array of integer keys).
  future<std::vector<value_type>> async_range(const key_box& box)
    requires multi_dimensional_key<K>
  {
    box.check_for<K>();
    return submit<std::vector<value_type>>({op_kind::range, box.lowest<K>(), box.highest<K>(), {}, box}, &to_pairs);
  }
  std::vector<value_type> range(const key_box& box)
    requires multi_dimensional_key<K>
  {
    return async_range(box).get();
  }
  /// The paper's syntax: "4.[2,8].3.[1,3]".
  std::vector<value_type> range(std::string_view text)
    requires multi_dimensional_key<K>
  {
    return range(key_box::parse(text));
  }

  /// Low level: any operation, with its raw result (status, and the head's order stamp under total order).
  future<operation_result> async_operation(const operation& op) {
    return submit<operation_result>(op, [](operation_result&& r) { return std::move(r); });
  }

  // ---- completion and inspection ---------------------------------------------------------------------------------

  /// Waits until every operation of this rank has completed. Any rank.
  void wait() {
    shoal::wait_until([&] { return service_->outstanding() == 0; });
  }

  /// Collective: every operation of every rank has completed and no message is in flight.
  void barrier() {
    wait();
    shoal::am::barrier(team());
  }

  const shoal::team& team() const noexcept { return reg_.team(); }

  /// Collective: the number of key-values in the whole map.
  std::size_t size() {
    barrier();
    return static_cast<std::size_t>(
        team().allreduce(static_cast<std::uint64_t>(service_->local_keys()), shoal::op::sum{}));
  }

  /// Collective: switches the consistency semantics (after a quiescence barrier).
  void set_consistency(consistency c) {
    barrier();
    opts_.semantics = c;
    service_->set_semantics(c);
    shoal::am::barrier(team());
  }

  /// Collective: changes k, the degree of asynchrony of every node (after a quiescence barrier; paper §1.2: "set or
  /// adjusted during execution").
  void set_asynchrony(std::size_t k) {
    barrier();
    opts_.asynchrony = k;
    service_->set_asynchrony(k);
    shoal::am::barrier(team());
  }

  std::size_t local_size() const { return service_->local_keys(); }
  std::size_t local_nodes() const { return service_->local_nodes(); }
  /// The current window W this rank's operations are issued under (adapted when options().adaptive_window): its
  /// client's, or on the head's rank under total order the sequencer's, which issues every rank's operations.
  std::size_t window() const { return service_->window(); }
  const ordered_map_options& options() const { return opts_; }
  const ordered_map_stats& stats() const { return service_->stats(); }

  /// For tests: adds a (possibly stale) shortcut to this rank's bulletin board. Any rank.
  void local_add_shortcut(const K& min, detail::ordered_map::node_ref node, int height) {
    service_->post_shortcut(min, node, height);
  }

 private:
  using service_type = detail::ordered_map::service<K, V>;
  using op_kind = ordered_map_op;

  static std::vector<value_type> to_pairs(operation_result&& r) { return std::move(r.items); }

  future<std::optional<value_type>> neighbour(op_kind kind, const K& key) {
    return submit<std::optional<value_type>>({kind, key, {}, {}, {}}, [](operation_result&& r) {
      std::optional<value_type> out;
      if (r.key) out.emplace(std::move(*r.key), std::move(*r.value));
      return out;
    });
  }

  template <class T, class Convert>
  future<T> submit(const operation& op, Convert convert) {
    reg_.check();
    auto state = layer::make_state<typename future<T>::state_type>();
    future<T> result(state);
    typename service_type::completion done = [state = std::move(state), convert](operation_result&& r) {
      if (r.st == ordered_map_status::list_full) {
        state->set_error(std::make_exception_ptr(container_full(
            "shoal::ordered_map: the list is full — every rank's nodes are in use (raise "
            "ordered_map_options::nodes_per_rank or ordered_map_options::granularity)")));
        return;
      }
      state->set_value(convert(std::move(r)));
    };
    shoal::wait_until([&] { return service_->try_issue(op, std::move(done)); });  // `done` moved from once issued
    return result;
  }

  shoal::registration reg_;  // the team, the run and the handler slot
  ordered_map_options opts_;
  std::uint32_t id_ = 0;
  detail::ordered_map::deliver_function deliver_;
  std::unique_ptr<service_type> service_;
};

}  // namespace shoal
