#pragma once
// The one registry mechanism of the engine: every family (transports, replication protocols, concurrency-control
// protocols, workloads) is a Registry of entries, each a line in its family's registry file. An entry is any struct
// with a `name` (std::string_view) and whatever the family needs (a factory, capabilities, a message-id range).
// Lookups that fail name what the family offers, so a configuration error tells the user what exists.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rdx {

template <typename Entry>
class Registry {
 public:
  // `family` names the kind of thing in messages ("replication protocol"). Two entries with one name are a
  // programming error: the process stops at once with a message (registries are built once, at start-up).
  Registry(std::string_view family, std::initializer_list<Entry> entries) : family_(family), entries_(entries) {
    for (size_t i = 0; i < entries_.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (entries_[i].name == entries_[j].name) {
          std::fprintf(stderr, "rdx: %s '%.*s' is registered twice\n", family_.c_str(),
                       static_cast<int>(entries_[i].name.size()), entries_[i].name.data());
          std::abort();
        }
  }

  const Entry* find(std::string_view name) const {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == name; });
    return it == entries_.end() ? nullptr : &*it;
  }

  // The entry, or kUnsupported naming every registered one.
  Result<const Entry*> lookup(std::string_view name) const {
    if (const Entry* e = find(name)) return e;
    return error(Code::kUnsupported, "{} '{}' is not implemented by this rdx build (available: {})", family_, name,
                 names_joined());
  }

  std::span<const Entry> entries() const { return entries_; }
  const std::string& family() const { return family_; }
  std::vector<std::string_view> names() const {
    std::vector<std::string_view> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  std::string names_joined() const {
    std::string out;
    for (const Entry& e : entries_) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
  }

 private:
  std::string family_;
  std::vector<Entry> entries_;
};

}  // namespace rdx
