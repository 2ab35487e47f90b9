#pragma once
// One client connection: socket, buffers, parser and the Redis session state (protocol version, auth, name,
// MULTI queue, WATCHed keys). Owned by the worker's RespFrontend; used only on that worker's thread.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/net.h"
#include "resp/byte_buffer.h"
#include "resp/command_table.h"
#include "resp/resp_parser.h"
#include "resp/resp_writer.h"

namespace rdx::resp {

// A command queued by MULTI owns its arguments (the input buffer moves on).
struct QueuedCommand {
  const CommandSpec* spec;
  std::vector<std::string> args;
};

struct Connection {
  Connection(net::UniqueFd socket, uint64_t client_id, std::string peer, std::string local, ParserLimits limits)
      : fd(std::move(socket)),
        id(client_id),
        peer_addr(std::move(peer)),
        local_addr(std::move(local)),
        parser(limits),
        created(std::chrono::steady_clock::now()),
        last_active(created) {}

  size_t pending_output() const { return out.size() - out_head; }
  ReplyWriter writer() { return ReplyWriter(&out, protocol); }

  // I/O
  net::UniqueFd fd;
  uint64_t id;
  std::string peer_addr, local_addr;  // "ip:port"
  ByteBuffer in;
  RequestParser parser;
  std::string out;  // encoded replies; out[out_head..] not yet written
  size_t out_head = 0;
  bool readable = false;  // edge seen and not drained (edge-triggered epoll)
  bool writable = true;
  bool busy = false;               // its command coroutine is running (suspended or not)
  bool suspended = false;          // that coroutine suspended: whoever resumes it must bring the connection back
  bool close_after_reply = false;  // QUIT, protocol error
  bool peer_closed = false;        // EOF: answer what was received, then close
  bool io_error = false;           // the socket failed: close as soon as not busy
  bool closed = false;             // fd closed; destroyed at the end of the front end's poll()
  bool hangup_seen = false;        // EPOLLRDHUP/HUP/ERR: read until EOF
  bool input_stalled = false;      // complete requests left unrun because the replies backed up
  bool queued_for_service = false;

  // Session
  int protocol = 2;
  bool authenticated = false;
  std::string name;
  std::string lib_name, lib_version;
  std::chrono::steady_clock::time_point created, last_active;
  std::string_view last_command = "NULL";
  bool in_multi = false;
  bool multi_dirty = false;  // a command was refused while queueing: EXEC answers EXECABORT
  std::vector<QueuedCommand> queued;
  std::unordered_map<std::string, uint64_t> watched;  // key -> version read at WATCH (0 = absent)
};

}  // namespace rdx::resp
