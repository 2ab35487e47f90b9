#pragma once
// Odyssey's client API (the seed's section 4) over the native client: sessions, each with a reorder buffer (ROB).
//  - A session is an entity issuing requests (an application task). Its requests execute in session order, one at a
//    time, and complete into their ROB slots; they are polled in session order too, whatever order the cluster
//    finished them in, so polling the last request of a batch says every earlier one completed.
//  - Asynchronous form: issue() returns a request id at once; poll() takes the session's next completed reply,
//    poll_all() every completed reply at its head. Synchronous form: run() issues and waits for the reply.
//  - Sessions belong to one Client (one thread): issue, poll and run are called on that thread, and polling drives
//    the client (its network and coroutines), as Odyssey's client threads and workers share the ROB.
// Operations and what each does on rdx's replication protocols (engine/src/replication/README.md: every one but zab
// is linearizable for every operation it offers, so the acquire/release variants need nothing more than the relaxed;
// zab's reads, relaxed and acquire alike, are sequentially consistent per session):
//   relaxed read, acquire read    GET at the session's member of the key's shard (one member per session)
//   relaxed write, release write  PUT
//   FAA                           the protocol's add (INCRBY's Rmw); kUnsupported where the protocol offers reads and
//                                 writes only (abd)
//   strong CAS                    the protocol's compare-and-set: swaps if the value equals `expected`, else fails
//                                 with the value it found
//   weak CAS                      may fail without a round trip when the comparison fails locally; no protocol here
//                                 keeps a copy it may compare against without one, so it runs as the strong CAS does
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/status.h"

namespace rdx::client {

struct Request {
  enum class Kind : uint8_t {
    kRelaxedRead,
    kAcquireRead,
    kRelaxedWrite,
    kReleaseWrite,
    kFaa,
    kWeakCas,
    kStrongCas,
  };
  Kind kind = Kind::kRelaxedRead;
  std::string key;
  std::string value;     // writes; CAS: the new value
  std::string expected;  // CAS: the value the key must hold
  int64_t delta = 0;     // FAA

  static Request read(std::string key, bool acquire = false) {
    return {acquire ? Kind::kAcquireRead : Kind::kRelaxedRead, std::move(key), {}, {}, 0};
  }
  static Request write(std::string key, std::string value, bool release = false) {
    return {release ? Kind::kReleaseWrite : Kind::kRelaxedWrite, std::move(key), std::move(value), {}, 0};
  }
  static Request faa(std::string key, int64_t delta) { return {Kind::kFaa, std::move(key), {}, {}, delta}; }
  static Request cas(std::string key, std::string expected, std::string value, bool weak = false) {
    return {weak ? Kind::kWeakCas : Kind::kStrongCas, std::move(key), std::move(value), std::move(expected), 0};
  }
};

struct Reply {
  uint64_t id = 0;          // what issue() returned
  Code status = Code::kOk;  // kOk; kNotFound: a read of an absent key; kUnsupported: the cluster's protocol does not
                            // offer the operation (nothing applied); kTimeout: it may or may not have taken effect
  uint64_t version = 0;     // reads: the version read; writes: the key's version after the operation
  std::string value;        // reads: the value; a failed CAS: the value found (empty if absent)
  bool applied = false;     // CAS: swapped; writes and FAA: true when kOk
  int64_t number = 0;       // FAA: the value after the addition
  std::string error;        // why, when status is not kOk
};

class Sessions {
 public:
  // `count` sessions over `client`, each with a ROB of `depth` slots; with `any_member` the sessions spread over the
  // members of a key's shard, each session staying on one member (session s: member s % members, the next connected
  // one while it is down), else every request goes to the key's primary. A session on one node is what a protocol
  // whose reads are sequentially consistent per node (zab) needs to read its own writes, as Odyssey's sessions,
  // which live on one machine.
  Sessions(Client& client, uint32_t count, uint32_t depth = 64, bool any_member = true);
  ~Sessions();  // drives the client until every issued request finished (each is bounded by the call timeout)
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // Appends `r` to session `s`: its request id (increasing within the session), or kInvalidArgument (a session id
  // out of range, an empty or oversized key, a value or expected value over the size limit) or kResourceExhausted
  // (the session's ROB is full: poll first). A refused request is not issued.
  Result<uint64_t> issue(uint32_t s, Request r);
  // The session's next reply in session order once completed (its slot is freed); nullopt while it is not.
  // kInvalidArgument for a session id out of range.
  Result<std::optional<Reply>> poll(uint32_t s);
  // Every completed reply at the head of the session, in session order.
  Result<std::vector<Reply>> poll_all(uint32_t s);
  // Synchronous: issues `r` and waits for its reply; only on a session with nothing outstanding (else
  // kInvalidArgument: poll those first).
  Result<Reply> run(uint32_t s, Request r);

  uint32_t count() const { return static_cast<uint32_t>(sessions_.size()); }
  size_t outstanding(uint32_t s) const { return s < count() ? sessions_[s].rob.size() : 0; }

 private:
  struct Slot {
    uint64_t id;
    Request request;
    bool completed = false;
    Reply reply;
  };
  struct Session {
    std::deque<Slot> rob;   // issued and not polled yet, in session order
    uint64_t next_id = 1;   // the id the next issued request gets
    uint64_t next_run = 1;  // the id of the next request to execute
    bool running = false;   // drain() is executing this session's requests
  };
  Status check_session(uint32_t s) const;
  rpc::Task<void> drain(uint32_t s);  // executes the session's requests in order while there are some
  rpc::Task<Reply> execute(uint32_t s, const Request& r);

  Client& client_;
  uint32_t depth_;
  bool any_member_;
  std::vector<Session> sessions_;
  int running_ = 0;
};

}  // namespace rdx::client
