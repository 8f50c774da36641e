// shoal/core/team.hpp — a group of ranks and its collectives.
//
// shoal::world() is every rank of the environment's communicator; shoal::node_team() the ranks of this node.
// Collectives (barrier, broadcast, allreduce, allgather) must be called by every rank of the team; while they
// wait they make progress, so active messages keep flowing. At SHOAL_CHECKS=2 (the Debug default,
// shoal/core/checks.hpp) every collective first verifies that all ranks entered the same collective and reports a
// mismatch as shoal::usage_error naming the calls of both sides.
//
// Cost: barrier B; broadcast / allreduce / allgather one MPI collective each (log p latency).
#pragma once

#include <mpi.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/core/checks.hpp"
#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/mpi_type.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/progress.hpp"

namespace shoal {

/// Built-in reduction operations; any stateless callable (T, T) -> T works as well.
namespace op {
struct sum {
  template <class T>
  T operator()(const T& a, const T& b) const { return a + b; }
};
struct min {
  template <class T>
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
struct max {
  template <class T>
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct bit_or {
  template <class T>
  T operator()(const T& a, const T& b) const { return a | b; }
};
struct bit_and {
  template <class T>
  T operator()(const T& a, const T& b) const { return a & b; }
};
}  // namespace op

/// A user reduction must be stateless (a captureless lambda or an empty function object): MPI applies it
/// wherever the reduction tree puts it, so it cannot carry state from the caller.
template <class Op, class T>
concept reduction_op = std::is_trivially_copyable_v<T> && std::default_initializable<Op> && std::is_empty_v<Op> &&
                       std::convertible_to<std::invoke_result_t<Op, const T&, const T&>, T>;

namespace detail {

template <class Op>
MPI_Op builtin_mpi_op() {
  if constexpr (std::is_same_v<Op, op::sum> || std::is_same_v<Op, std::plus<>>) return MPI_SUM;
  else if constexpr (std::is_same_v<Op, op::min>) return MPI_MIN;
  else if constexpr (std::is_same_v<Op, op::max>) return MPI_MAX;
  else if constexpr (std::is_same_v<Op, op::bit_or>) return MPI_BOR;
  else if constexpr (std::is_same_v<Op, op::bit_and>) return MPI_BAND;
  else return MPI_OP_NULL;
}

template <class T, class Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  Op op{};
  for (int i = 0; i < *len; ++i) b[i] = op(a[i], b[i]);  // MPI: inout = in (op) inout, in rank order
}

/// A committed contiguous-bytes datatype for T, freed when the call ends.
struct bytes_type {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  explicit bytes_type(std::size_t bytes) {
    SHOAL_MPI(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type));
    SHOAL_MPI(MPI_Type_commit(&type));
  }
  ~bytes_type() { SHOAL_MPI_CLEANUP(MPI_Type_free(&type)); }
  bytes_type(const bytes_type&) = delete;
  bytes_type& operator=(const bytes_type&) = delete;
};

}  // namespace detail

class team {
 public:
  team() = default;
  explicit team(MPI_Comm comm) : comm_(comm) {
    SHOAL_MPI(MPI_Comm_rank(comm, &rank_));
    SHOAL_MPI(MPI_Comm_size(comm, &size_));
  }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  MPI_Comm comm() const noexcept { return comm_; }

  /// Collective. Returns when every rank of the team has entered; makes progress while waiting.
  void barrier() const {
    check_collective("barrier");
    MPI_Request req;
    SHOAL_MPI(MPI_Ibarrier(comm_, &req));
    detail::wait_request(req);
  }

  /// Collective. Every rank returns root's value (trivially copyable T).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T broadcast(T value, int root = 0) const {
    check_collective("broadcast");
    check_root(root);
    MPI_Request req;
    SHOAL_MPI(MPI_Ibcast(&value, static_cast<int>(sizeof(T)), MPI_BYTE, root, comm_, &req));
    detail::wait_request(req);
    return value;
  }

  /// Collective. Every rank returns root's vector.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::vector<T> broadcast(std::vector<T> values, int root = 0) const {
    auto n = broadcast<std::uint64_t>(values.size(), root);
    values.resize(n);
    broadcast_bytes(values.data(), n * sizeof(T), root);
    return values;
  }

  /// Collective. Every rank returns root's string.
  std::string broadcast(std::string text, int root = 0) const {
    auto n = broadcast<std::uint64_t>(text.size(), root);
    text.resize(n);
    broadcast_bytes(text.data(), n, root);
    return text;
  }

  /// Collective. Combines every rank's value with `op` (op::sum, op::min, op::max, op::bit_or, op::bit_and, or a
  /// stateless user callable on a trivially copyable type) and returns the result on every rank.
  template <class T, class Op>
    requires reduction_op<Op, T>
  T allreduce(T value, Op) const {
    check_collective("allreduce");
    T out{};
    MPI_Request req;
    // MPICH 4.0.2 compares MPI_UINT32_T / MPI_UINT64_T as signed in MPI_MIN / MPI_MAX (min(5, 2^64-1) = 2^64-1),
    // so unsigned minima and maxima take the user-operation path, which is right on every MPI.
    constexpr bool unsigned_order = std::is_unsigned_v<T> && (std::is_same_v<Op, op::min> || std::is_same_v<Op, op::max>);
    if constexpr (detail::has_mpi_type<T> && !unsigned_order) {
      MPI_Op mop = detail::builtin_mpi_op<Op>();
      if (mop != MPI_OP_NULL) {
        SHOAL_MPI(MPI_Iallreduce(&value, &out, 1, detail::mpi_type<T>(), mop, comm_, &req));
        detail::wait_request(req);
        return out;
      }
    }
    detail::bytes_type type(sizeof(T));
    MPI_Op mop;
    SHOAL_MPI(MPI_Op_create(&detail::user_reduce<T, Op>, /*commute=*/0, &mop));
    int rc = MPI_Iallreduce(&value, &out, 1, type.type, mop, comm_, &req);
    if (rc == MPI_SUCCESS) detail::wait_request(req);
    SHOAL_MPI_CLEANUP(MPI_Op_free(&mop));
    detail::mpi_check(rc, "MPI_Iallreduce");
    return out;
  }

  /// Collective. Element i of the result is rank i's value.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::vector<T> allgather(const T& value) const {
    check_collective("allgather");
    std::vector<T> out(static_cast<std::size_t>(size_));
    MPI_Request req;
    SHOAL_MPI(MPI_Iallgather(&value, static_cast<int>(sizeof(T)), MPI_BYTE, out.data(), static_cast<int>(sizeof(T)),
                             MPI_BYTE, comm_, &req));
    detail::wait_request(req);
    return out;
  }

 private:
  void broadcast_bytes(void* data, std::size_t bytes, int root) const {
    constexpr std::size_t chunk = 1u << 30;
    auto* p = static_cast<char*>(data);
    for (std::size_t done = 0; done < bytes; done += chunk) {
      const int n = static_cast<int>(std::min(chunk, bytes - done));
      MPI_Request req;
      SHOAL_MPI(MPI_Ibcast(p + done, n, MPI_BYTE, root, comm_, &req));
      detail::wait_request(req);
    }
  }

  void check_root(int root) const {
    if (root < 0 || root >= size_) {
      throw usage_error("shoal: root rank " + std::to_string(root) + " is outside the team of " +
                        std::to_string(size_) + " ranks");
    }
  }

  // At SHOAL_CHECKS=2, verifies that every rank entered the same collective: the minimum and the maximum of a hash of
  // the call's name agree only if every rank called the same one. On a mismatch (every rank sees it) the names
  // themselves are exchanged, so the error says which rank called what.
  void check_collective([[maybe_unused]] const char* name) const {
#if SHOAL_CHECKS >= 2
    std::uint64_t h = 1469598103934665603ull;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    std::int64_t mine[2] = {static_cast<std::int64_t>(h >> 1), -static_cast<std::int64_t>(h >> 1)};
    std::int64_t agg[2];
    // Non-blocking and waited with progress: a rank in a collective must keep serving active messages.
    MPI_Request req;
    SHOAL_MPI(MPI_Iallreduce(mine, agg, 2, MPI_INT64_T, MPI_MIN, comm_, &req));
    detail::wait_request(req);
    if (agg[0] == -agg[1]) return;
    constexpr std::size_t width = 32;
    char own[width] = {};
    std::string(name).copy(own, width - 1);
    std::vector<char> all(width * static_cast<std::size_t>(size_));
    SHOAL_MPI(MPI_Iallgather(own, width, MPI_CHAR, all.data(), width, MPI_CHAR, comm_, &req));
    detail::wait_request(req);
    std::string other = "a different collective";
    for (int r = 0; r < size_; ++r) {
      const std::string theirs(all.data() + width * static_cast<std::size_t>(r));
      if (theirs != name) {
        other = theirs + " on rank " + std::to_string(r);
        break;
      }
    }
    throw usage_error(std::string("shoal: collective mismatch on a team of ") + std::to_string(size_) +
                      " ranks: rank " + std::to_string(rank_) + " called " + name + " while " + other +
                      " was called; every rank of a team must call the same collectives in the same order");
#endif
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

namespace detail {
inline team& world_team_storage() {
  static team t;
  return t;
}
inline team& node_team_storage() {
  static team t;
  return t;
}
}  // namespace detail

/// Every rank of the environment's communicator.
inline const team& world() {
  detail::rt();
  return detail::world_team_storage();
}
/// The ranks that share this rank's node (MPI_COMM_TYPE_SHARED).
inline const team& node_team() {
  detail::rt();
  return detail::node_team_storage();
}

/// This rank in world().
inline int rank() { return detail::rt().rank; }
/// Number of ranks in world().
inline int size() { return detail::rt().size; }

/// Collective over world(): see team::barrier.
inline void barrier() { world().barrier(); }
/// Collective over world(): see team::broadcast.
template <class T>
auto broadcast(T value, int root = 0) {
  return world().broadcast(std::move(value), root);
}
/// Collective over world(): see team::allreduce.
template <class T, class Op>
T allreduce(T value, Op op) {
  return world().allreduce(value, op);
}
/// Collective over world(): see team::allgather.
template <class T>
std::vector<T> allgather(const T& value) {
  return world().allgather(value);
}

}  // namespace shoal
