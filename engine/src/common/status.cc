#include "common/status.h"

namespace rdx {

const char* code_name(Code c) {
  switch (c) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kUnavailable:
      return "UNAVAILABLE";
    case Code::kTimeout:
      return "TIMEOUT";
    case Code::kBusy:
      return "BUSY";
    case Code::kAborted:
      return "ABORTED";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kInternal:
      return "INTERNAL";
    case Code::kUnsupported:
      return "UNSUPPORTED";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return fmt::format("{}: {}", code_name(code_), msg_);
}

}  // namespace rdx
